//! Liveness and readiness.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::ApiError;
use crate::backends::Backend;
use crate::lifecycle::Broker;

pub async fn live() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// Ready only when the store and every configured backend answer.
pub async fn ready(State(broker): State<Arc<Broker>>) -> Result<Json<Value>, ApiError> {
    broker
        .store
        .ping()
        .await
        .map_err(|e| ApiError::NotReady(format!("store: {e}")))?;
    if let Some(vault) = &broker.vault {
        vault
            .check()
            .await
            .map_err(|e| ApiError::NotReady(format!("vault: {e}")))?;
    }
    Ok(Json(json!({ "status": "ready" })))
}
