//! The OpenAPI 3.1 document: operations come from the `#[utoipa::path]` on each handler and the
//! routes registered in `api::routes`, so a route cannot exist without being documented. The
//! types here describe bodies that handlers build ad hoc (errors, acknowledgements).

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// Every `error` code the API answers with; `api/error.rs` chooses which.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ErrorCode {
    InvalidRequest,
    InvalidToken,
    UnsubstitutedClaim,
    UnknownIssuer,
    InvalidSignature,
    AccessDenied,
    NotFound,
    MethodNotAllowed,
    TokenReplayed,
    JobEnded,
    PayloadTooLarge,
    BackendUnavailable,
    BackendRefused,
    IssuerUnavailable,
    StoreUnavailable,
    NotReady,
    CiUnavailable,
    Overloaded,
    RequestTimeout,
    InvalidForwardedFor,
    ExchangeCapReached,
}

/// One refused role and the caller's own failing conditions.
#[derive(Serialize, ToSchema)]
pub struct RoleDenialBody {
    pub role: String,
    pub reasons: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorCode,
    pub message: String,
    pub request_id: String,
    /// Only with `access_denied`.
    #[schema(nullable = false)]
    pub denied: Option<Vec<RoleDenialBody>>,
}

/// A job ended: how many of its credentials are now being revoked.
#[derive(Serialize, ToSchema)]
pub struct JobEndBody {
    pub job_id: String,
    pub revoked: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum AckStatus {
    Ignored,
    DuplicateDelivery,
    /// A start event: the runner it names is recorded for the job, which goes on.
    RunnerRecorded,
}

/// A delivery acknowledged without ending a job.
#[derive(Serialize, ToSchema)]
pub struct WebhookAck {
    pub status: AckStatus,
    /// Why it was ignored.
    #[schema(nullable = false)]
    pub reason: Option<String>,
    /// The job whose runner was recorded.
    #[schema(nullable = false)]
    pub job_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Status {
    pub status: String,
}

struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "ci_oidc_token",
            SecurityScheme::Http(Http::builder().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ci-creds",
        description = "Credential lifecycle broker for CI: a job's OIDC token in, short-lived job-bound credentials out. \
Every response carries `Cache-Control: no-store` and `x-request-id`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    components(schemas(ErrorResponse, ErrorCode, RoleDenialBody, JobEndBody, WebhookAck, Status)),
    modifiers(&BearerToken),
)]
pub struct ApiDoc;

static DOCUMENT: LazyLock<String> =
    LazyLock::new(|| super::openapi().to_pretty_json().unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")));

/// The document as checked in at `openapi/openapi.json`.
pub fn document_json() -> String {
    format!("{}\n", DOCUMENT.as_str())
}

#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "This document", content_type = "application/json")))]
pub async fn serve() -> Response {
    let mut response = document_json().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
