//! `GET /metrics`: Prometheus text format.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::ApiError;
use super::openapi::ErrorResponse;
use crate::lifecycle::Broker;

#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain; version=0.0.4", body = String),
        (status = 404, description = "`not_found`: no metrics recorder in this process", body = ErrorResponse),
    ))]
pub async fn scrape(State(broker): State<Arc<Broker>>) -> Result<Response, ApiError> {
    let text = crate::metrics::render(&broker).await.ok_or(ApiError::NotFound)?;
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    Ok(response)
}
