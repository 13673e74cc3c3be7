//! The HTTP API: routes, the one mapping of errors to statuses and codes, and request limits.

mod body;
mod context;
mod credentials;
pub mod credentials_request;
mod error;
mod exchange_address;
mod health;
pub mod limits;
mod metrics;
mod openapi;
mod webhooks;

pub use error::ApiError;
pub use exchange_address::TrustedProxies;
pub use openapi::document_json as openapi_json;

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::http::{HeaderValue, header};
use tower_http::set_header::SetResponseHeaderLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::ci::CiKind;
use crate::lifecycle::{Broker, Exchange, JobEnds};
use limits::LimitsConfig;

/// Larger than any legitimate request body; bigger ones are answered 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What the handlers are given: each takes the one service it calls (axum's `FromRef`), never
/// the parts behind it.
#[derive(Clone)]
struct Services {
    exchange: Arc<Exchange>,
    job_ends: Arc<JobEnds>,
    /// Broker-wide reads: readiness, the counts a scrape records.
    broker: Arc<Broker>,
}

impl FromRef<Services> for Arc<Exchange> {
    fn from_ref(services: &Services) -> Self {
        services.exchange.clone()
    }
}

impl FromRef<Services> for Arc<JobEnds> {
    fn from_ref(services: &Services) -> Self {
        services.job_ends.clone()
    }
}

impl FromRef<Services> for Arc<Broker> {
    fn from_ref(services: &Services) -> Self {
        services.broker.clone()
    }
}

pub fn router(broker: Arc<Broker>, limits: &LimitsConfig, trusted_proxies: TrustedProxies) -> Router {
    let services = Services { exchange: broker.exchange(), job_ends: broker.job_ends(), broker };
    let (routes, _) = routes().split_for_parts();
    routes
        .layer(Extension(Arc::new(trusted_proxies)))
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(limits::InFlight::new(limits), limits::admit))
        .layer(axum::middleware::from_fn(context::request_context))
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .with_state(services)
}

/// The largest body a request to `path` may have.
fn body_limit(path: &str) -> usize {
    if path.starts_with("/v1/webhooks/") { webhooks::MAX_WEBHOOK_BYTES } else { MAX_BODY_BYTES }
}

/// The OpenAPI document of exactly the routes `router` serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().split_for_parts().1
}

fn routes() -> OpenApiRouter<Services> {
    let routes = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(credentials::create))
        .routes(routes!(webhooks::revoke_own_job));
    CiKind::ALL
        .into_iter()
        .fold(routes, |routes, kind| routes.routes(webhooks::route(kind)))
        .routes(routes!(webhooks::named))
        .routes(routes!(health::live))
        .routes(routes!(health::ready))
        .routes(routes!(metrics::scrape))
        .routes(routes!(openapi::serve))
}
