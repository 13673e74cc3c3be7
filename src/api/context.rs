//! Per-request context: a request id on every response and in every error body, and one log
//! line per request (method, path, status; never headers or bodies).

use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ErrorBody;

pub async fn request_context(request: Request, next: Next) -> Response {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let mut response = next.run(request).await;
    if let Some(body) = response.extensions_mut().remove::<ErrorBody>() {
        let (mut parts, _) = response.into_parts();
        let rendered = body.render(&request_id);
        parts.headers.remove(axum::http::header::CONTENT_LENGTH);
        response = (parts, axum::Json(rendered)).into_response();
    }
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    tracing::info!(%request_id, %method, %path, status = response.status().as_u16(),
        elapsed_ms = started.elapsed().as_millis() as u64, "request");
    response
}
