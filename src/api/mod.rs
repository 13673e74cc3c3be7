//! The HTTP API: routes, the one mapping of errors to statuses and codes, and request limits.

mod body;
mod context;
mod credentials;
mod error;
mod health;
mod metrics;
mod webhooks;

pub use error::ApiError;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::routing::{get, post};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::lifecycle::Broker;

/// Larger than any legitimate request body; bigger ones are answered 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

pub fn router(broker: Arc<Broker>) -> Router {
    Router::new()
        .route("/v1/credentials", post(credentials::create))
        .route("/v1/jobs/self/revoke", post(webhooks::revoke_own_job))
        .route("/v1/webhooks/github", post(webhooks::github))
        .route("/v1/webhooks/gitlab", post(webhooks::gitlab))
        .route("/v1/webhooks/buildkite", post(webhooks::buildkite))
        .route("/healthz", get(health::live))
        .route("/readyz", get(health::ready))
        .route("/metrics", get(metrics::scrape))
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(context::request_context))
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .with_state(broker)
}
