//! Liveness and readiness.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::ApiError;
use crate::lifecycle::Broker;

pub async fn live() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Ready only when the store and every configured backend answer.
pub async fn ready(State(broker): State<Arc<Broker>>) -> Result<Json<Value>, ApiError> {
    broker.store.ping().await.map_err(|e| ApiError::NotReady(format!("store: {e}")))?;
    broker.backends.check().await.map_err(|e| ApiError::NotReady(e.to_string()))?;
    Ok(Json(json!({ "status": "ready" })))
}
