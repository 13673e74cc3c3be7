//! `POST /v1/webhooks/{github,gitlab,buildkite,circleci}` and `POST /v1/jobs/self/revoke`.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use secrecy::ExposeSecret;
use serde_json::json;

use super::ApiError;
use super::body::read_limited;
use super::credentials::bearer_token;
use super::openapi::{ErrorResponse, JobEndBody, WebhookAck};
use crate::lifecycle::Broker;
use crate::lifecycle::webhooks::{WebhookOutcome, WebhookSource};
use crate::metrics;

/// What every webhook endpoint answers; documented once for all three.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
enum WebhookResponses {
    /// The job ended
    #[response(status = 200)]
    Ended(JobEndBody),
    /// Acknowledged, nothing changed (another event, or a redelivery)
    #[response(status = 202)]
    Acknowledged(WebhookAck),
    /// `invalid_request`
    #[response(status = 400)]
    InvalidRequest(ErrorResponse),
    /// `invalid_signature`
    #[response(status = 401)]
    InvalidSignature(ErrorResponse),
    /// `not_found`: this webhook is not configured
    #[response(status = 404)]
    NotConfigured(ErrorResponse),
    /// `request_timeout`: the delivery did not arrive in full within `limits.request_timeout`
    #[response(status = 408)]
    RequestTimeout(ErrorResponse),
    /// `payload_too_large`
    #[response(status = 413)]
    PayloadTooLarge(ErrorResponse),
    /// `store_unavailable`; `overloaded`, with `Retry-After`
    #[response(status = 503)]
    StoreUnavailable(ErrorResponse),
}

/// Webhook bodies larger than any job event are refused.
pub const MAX_WEBHOOK_BYTES: usize = 1024 * 1024;

/// GitHub `workflow_job` deliveries, signed with `X-Hub-Signature-256`.
#[utoipa::path(post, path = "/v1/webhooks/github", tag = "webhooks",
    request_body(content = serde_json::Value, description = "The CI system's delivery, as sent"),
    responses(WebhookResponses))]
pub async fn github(State(broker): State<Arc<Broker>>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    receive(&broker, WebhookSource::Github, &headers, body).await
}

/// GitLab Job Hook deliveries, authenticated by `X-Gitlab-Token`.
#[utoipa::path(post, path = "/v1/webhooks/gitlab", tag = "webhooks",
    request_body(content = serde_json::Value, description = "The CI system's delivery, as sent"),
    responses(WebhookResponses))]
pub async fn gitlab(State(broker): State<Arc<Broker>>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    receive(&broker, WebhookSource::Gitlab, &headers, body).await
}

/// Buildkite `job.finished` deliveries, by `X-Buildkite-Token` or `X-Buildkite-Signature`.
#[utoipa::path(post, path = "/v1/webhooks/buildkite", tag = "webhooks",
    request_body(content = serde_json::Value, description = "The CI system's delivery, as sent"),
    responses(WebhookResponses))]
pub async fn buildkite(
    State(broker): State<Arc<Broker>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    receive(&broker, WebhookSource::Buildkite, &headers, body).await
}

/// CircleCI `job-completed` deliveries, signed with `circleci-signature: v1=…`.
#[utoipa::path(post, path = "/v1/webhooks/circleci", tag = "webhooks",
    request_body(content = serde_json::Value, description = "The CI system's delivery, as sent"),
    responses(WebhookResponses))]
pub async fn circleci(State(broker): State<Arc<Broker>>, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    receive(&broker, WebhookSource::Circleci, &headers, body).await
}

async fn receive(
    broker: &Broker,
    source: WebhookSource,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = match read_limited(body, MAX_WEBHOOK_BYTES).await {
        Ok(body) => broker.webhook(source, headers, &body).await.map_err(ApiError::from),
        Err(error) => Err(error),
    };
    let label = match &outcome {
        Ok(WebhookOutcome::Ended(_)) => "ended",
        Ok(WebhookOutcome::RunnerRecorded { .. }) => "runner_recorded",
        Ok(WebhookOutcome::Ignored(_)) => "ignored",
        Ok(WebhookOutcome::Duplicate) => "duplicate",
        Err(error) => error.code(),
    };
    metrics::webhook(source.name(), label);
    let outcome = outcome?;
    tracing::info!(source = source.name(), outcome = ?outcome, "webhook");
    Ok(match outcome {
        WebhookOutcome::Ended(ended) => (StatusCode::OK, Json(ended)).into_response(),
        WebhookOutcome::RunnerRecorded { job_id } => {
            (StatusCode::ACCEPTED, Json(json!({ "status": "runner_recorded", "job_id": job_id }))).into_response()
        }
        WebhookOutcome::Ignored(reason) => {
            (StatusCode::ACCEPTED, Json(json!({ "status": "ignored", "reason": reason }))).into_response()
        }
        WebhookOutcome::Duplicate => {
            (StatusCode::ACCEPTED, Json(json!({ "status": "duplicate_delivery" }))).into_response()
        }
    })
}

/// The job ends itself with one of its own valid tokens (an exchanged one is fine).
#[utoipa::path(post, path = "/v1/jobs/self/revoke", tag = "credentials",
    security(("ci_oidc_token" = [])),
    responses(
        (status = 200, description = "The job ended; its credentials are being revoked", body = JobEndBody),
        (status = 401, description = "`invalid_token`, `unknown_issuer`", body = ErrorResponse),
        (status = 503, description = "`issuer_unavailable`, `store_unavailable`; `overloaded`, with `Retry-After`", body = ErrorResponse),
    ))]
pub async fn revoke_own_job(State(broker): State<Arc<Broker>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let token = bearer_token(&headers)?;
    let ended = broker.end_own_job(token.expose_secret()).await?;
    Ok((StatusCode::OK, Json(ended)).into_response())
}
