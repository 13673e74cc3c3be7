//! `POST /v1/webhooks/<name>`, one for each `[webhooks.<name>]` table, and
//! `POST /v1/jobs/self/revoke`.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::json;
use utoipa::openapi::HttpMethod;
use utoipa::openapi::path::{PathItem, Paths};
use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use super::ApiError;
use super::body::read_limited;
use super::credentials::bearer_token;
use super::openapi::{ErrorResponse, JobEndBody, WebhookAck};
use crate::ci::{CiKind, NamedJob};
use crate::lifecycle::JobEnds;
use crate::lifecycle::webhooks::WebhookOutcome;
use crate::metrics;

/// What every webhook endpoint answers; documented once for all of them.
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

/// The documentation every `/v1/webhooks/<ci>` shares; `route` gives each CI its own path,
/// operation id and summary.
#[utoipa::path(post, path = "/v1/webhooks/ci", tag = "webhooks",
    request_body(content = serde_json::Value, description = "The CI system's delivery, as sent"),
    responses(WebhookResponses))]
async fn documented() -> StatusCode {
    StatusCode::NOT_FOUND
}

/// `POST /v1/webhooks/<name>` for the CI `kind`, with its documentation: the endpoint of a table
/// named after its CI, as `[webhooks.jenkins]`.
pub fn route(kind: CiKind) -> UtoipaMethodRouter<super::Services> {
    let (schemas, documented, _): UtoipaMethodRouter<super::Services> = routes!(documented);
    let mut operation = documented.paths.into_values().find_map(|item| item.post).expect("a documented POST");
    operation.operation_id = Some(kind.name().to_owned());
    operation.summary = Some(kind.ci().webhook_summary.to_owned());
    let path = format!("/v1/webhooks/{}", kind.name());
    let paths = Paths::builder().path(path, PathItem::new(HttpMethod::Post, operation)).build();
    let handler = post(move |State(job_ends): State<Arc<JobEnds>>, headers: HeaderMap, body: Body| async move {
        receive(&job_ends, kind.name(), &headers, body).await
    });
    (schemas, paths, handler)
}

/// A `[webhooks.<name>]` table's deliveries, ending its `issuer`'s jobs only.
///
/// Read as that issuer's CI writes them, as at the CI's own path.
#[utoipa::path(post, path = "/v1/webhooks/{name}", tag = "webhooks", operation_id = "named",
    params(("name" = String, Path, description = "The table's name: letters, digits, `-` and `_`")),
    request_body(content = serde_json::Value, description = "The CI system's delivery, as sent"),
    responses(WebhookResponses))]
pub async fn named(
    State(job_ends): State<Arc<JobEnds>>,
    name: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    // A name that does not decode names no endpoint.
    let Ok(Path(name)) = name else { return Err(ApiError::NotFound) };
    receive(&job_ends, &name, &headers, body).await
}

async fn receive(job_ends: &JobEnds, name: &str, headers: &HeaderMap, body: Body) -> Result<Response, ApiError> {
    let outcome = match read_limited(body, MAX_WEBHOOK_BYTES).await {
        Ok(body) => job_ends.webhook(name, headers, &body).await.map_err(ApiError::from),
        Err(error) => Err(error),
    };
    let label = match &outcome {
        Ok(WebhookOutcome::Ended(_)) => "ended",
        Ok(WebhookOutcome::RunnerRecorded { .. }) => "runner_recorded",
        Ok(WebhookOutcome::Ignored(_)) => "ignored",
        Ok(WebhookOutcome::Duplicate) => "duplicate",
        Err(error) => error.code(),
    };
    // Labelled by configured names only: a path nobody configured is the caller's word, and not
    // counted unless it is a CI's own path.
    match job_ends.webhook_labels(name) {
        Some((kind, configured)) => metrics::webhook(kind.name(), configured, label),
        None => {
            if let Some(kind) = CiKind::from_name(name) {
                metrics::webhook(kind.name(), kind.name(), label);
            }
        }
    }
    let outcome = outcome?;
    tracing::info!(webhook = name, outcome = ?outcome, "webhook");
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

/// What a job may say when it ends itself: nothing, or (Azure Pipelines) the job within the run
/// it is, as its exchange named it.
#[derive(Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// Azure Pipelines only: `System.JobId` and `System.JobAttempt`, so that only this job ends,
    /// not its whole run. Refused with `invalid_request` for any other CI.
    #[serde(default)]
    #[schema(value_type = Option<Object>, nullable = false)]
    job: Option<NamedJob>,
}

/// The job ends itself with one of its own valid tokens (an exchanged one is fine).
#[utoipa::path(post, path = "/v1/jobs/self/revoke", tag = "credentials",
    request_body(content = Option<RevokeRequest>, description = "Optional; an empty body ends the job the token names"),
    security(("ci_oidc_token" = [])),
    responses(
        (status = 200, description = "The job ended; its credentials are being revoked", body = JobEndBody),
        (status = 400, description = "`invalid_request`", body = ErrorResponse),
        (status = 401, description = "`invalid_token`, `unsubstituted_claim`, `unknown_issuer`", body = ErrorResponse),
        (status = 503, description = "`issuer_unavailable`, `store_unavailable`; `overloaded`, with `Retry-After`", body = ErrorResponse),
    ))]
pub async fn revoke_own_job(
    State(job_ends): State<Arc<JobEnds>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let body = read_limited(body, MAX_REVOKE_BYTES).await?;
    let request: RevokeRequest = if body.iter().all(u8::is_ascii_whitespace) {
        RevokeRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::InvalidRequest(format!(
                "the body must be empty or JSON like {{\"job\": {{\"id\": …, \"attempt\": …}}}}: {e}"
            ))
        })?
    };
    let token = bearer_token(&headers)?;
    let ended = job_ends.end_own_job(token.expose_secret(), request.job).await?;
    Ok((StatusCode::OK, Json(ended)).into_response())
}

/// A revocation names at most its job.
const MAX_REVOKE_BYTES: usize = 4096;
