//! Liveness and readiness.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::ApiError;
use super::openapi::{ErrorResponse, Status};
use crate::lifecycle::Broker;

#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process runs", body = Status)))]
pub async fn live() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Ready only when the store and every configured backend answer.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "The store and every backend answer", body = Status),
        (status = 503, description = "`not_ready`", body = ErrorResponse),
    ))]
pub async fn ready(State(broker): State<Arc<Broker>>) -> Result<Json<Value>, ApiError> {
    broker.ready().await.map_err(ApiError::NotReady)?;
    Ok(Json(json!({ "status": "ready" })))
}
