//! The only place errors become HTTP statuses and stable `error` codes.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::exchange_address::ForwardedForError;
use crate::backends;
use crate::identity;
use crate::lifecycle;
use crate::policy::RoleDenial;

/// Slots free up in milliseconds; a second is long enough for a burst to pass.
const OVERLOADED_RETRY_AFTER_SECONDS: &str = "1";

#[derive(Debug)]
pub enum ApiError {
    InvalidRequest(String),
    PayloadTooLarge,
    MissingToken,
    NotFound,
    MethodNotAllowed,
    NotReady(String),
    /// Every in-flight slot was taken for the whole of the short wait.
    Overloaded,
    /// The request's head and body took longer than `limits.request_timeout`.
    RequestTimeout,
    /// A trusted proxy's `X-Forwarded-For` could not be read.
    InvalidForwardedFor(ForwardedForError),
    Lifecycle(lifecycle::Error),
}

impl From<lifecycle::Error> for ApiError {
    fn from(error: lifecycle::Error) -> Self {
        Self::Lifecycle(error)
    }
}

/// The error as it will be rendered; the request-context middleware adds the request id.
#[derive(Clone, Debug)]
pub struct ErrorBody {
    code: &'static str,
    message: String,
    denied: Option<Vec<RoleDenial>>,
}

impl ErrorBody {
    pub fn render(&self, request_id: &str) -> Value {
        let mut body = json!({ "error": self.code, "message": self.message, "request_id": request_id });
        if let Some(denied) = &self.denied {
            body["denied"] = json!(denied);
        }
        body
    }
}

impl ApiError {
    /// The stable `error` code, also the `result` label of metrics.
    pub fn code(&self) -> &'static str {
        self.status_and_code().1
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        use lifecycle::Error as L;
        match self {
            Self::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
            Self::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            Self::MissingToken => (StatusCode::UNAUTHORIZED, "invalid_token"),
            Self::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            Self::NotReady(_) => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
            Self::Overloaded => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            Self::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
            Self::InvalidForwardedFor(_) => (StatusCode::BAD_REQUEST, "invalid_forwarded_for"),
            Self::Lifecycle(error) => match error {
                L::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
                L::Identity(identity::Error::UnknownIssuer) => (StatusCode::UNAUTHORIZED, "unknown_issuer"),
                L::Identity(identity::Error::KeysUnavailable { .. }) => {
                    (StatusCode::SERVICE_UNAVAILABLE, "issuer_unavailable")
                }
                L::Identity(identity::Error::UnsubstitutedClaim(_)) => {
                    (StatusCode::UNAUTHORIZED, "unsubstituted_claim")
                }
                L::Identity(_) => (StatusCode::UNAUTHORIZED, "invalid_token"),
                L::Denied(_) => (StatusCode::FORBIDDEN, "access_denied"),
                L::Replayed => (StatusCode::CONFLICT, "token_replayed"),
                L::JobEnded => (StatusCode::CONFLICT, "job_ended"),
                // 403, not 429: no wait lowers a job's count, so the refusal is final for the job,
                // and clients (ours in `client/broker.rs`) retry a 429 as transient, which would
                // only spend more of the job's tokens on refusals.
                L::ExchangeCapReached { .. } => (StatusCode::FORBIDDEN, "exchange_cap_reached"),
                L::CiUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "ci_unavailable"),
                L::RunnerReused { .. } => (StatusCode::FORBIDDEN, "runner_reused"),
                L::RunnerUnknown { .. } => (StatusCode::FORBIDDEN, "runner_unknown"),
                L::AddressUnknown { .. } => (StatusCode::FORBIDDEN, "address_unknown"),
                L::InvalidSignature => (StatusCode::UNAUTHORIZED, "invalid_signature"),
                L::WebhookNotConfigured => (StatusCode::NOT_FOUND, "not_found"),
                L::Backend(backends::Error::Refused { .. }) => (StatusCode::BAD_GATEWAY, "backend_refused"),
                L::Backend(_) => (StatusCode::SERVICE_UNAVAILABLE, "backend_unavailable"),
                L::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
            },
        }
    }

    fn message(&self) -> String {
        match self {
            Self::InvalidRequest(message) => message.clone(),
            Self::PayloadTooLarge => format!("the request body is larger than {} bytes", super::MAX_BODY_BYTES),
            Self::MissingToken => "send the CI job's OIDC token as `Authorization: Bearer <token>`".into(),
            Self::NotFound => "no such endpoint".into(),
            Self::MethodNotAllowed => "this endpoint does not accept that method".into(),
            Self::NotReady(reason) => reason.clone(),
            Self::Overloaded => "the broker is answering as many requests as it may; retry after Retry-After".into(),
            Self::RequestTimeout => "the request was not received in full in time".into(),
            Self::InvalidForwardedFor(error) => error.to_string(),
            // Backend and store details go to the log, not to the caller; a refusal's code (e.g.
            // AWS's `AccessDenied`) tells the platform team where to look.
            Self::Lifecycle(lifecycle::Error::Backend(backends::Error::Refused { backend, code, .. })) => {
                format!("the {backend} backend refused to issue the credential: {code}")
            }
            Self::Lifecycle(lifecycle::Error::Backend(_)) => {
                "the credential backend is unavailable; retry later".into()
            }
            Self::Lifecycle(lifecycle::Error::Store(_)) => "the broker's store is unavailable; retry later".into(),
            Self::Lifecycle(error) => error.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        // A flood answered `overloaded` would flood the log too; the metric counts it.
        if status.is_server_error() && !matches!(self, Self::Overloaded) {
            tracing::warn!(code, error = %self.log_detail(), "request failed");
        }
        let denied = match &self {
            Self::Lifecycle(lifecycle::Error::Denied(denials)) => Some(denials.clone()),
            _ => None,
        };
        let body = ErrorBody { code, message: self.message(), denied };
        let mut response = status.into_response();
        let headers = response.headers_mut();
        match &self {
            _ if status == StatusCode::UNAUTHORIZED => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            Self::Overloaded => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static(OVERLOADED_RETRY_AFTER_SECONDS));
            }
            Self::Lifecycle(lifecycle::Error::Backend(backends::Error::Throttled { retry_after_seconds, .. })) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_seconds));
            }
            // The rest of a body that came too slowly is not worth reading.
            Self::RequestTimeout => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response.extensions_mut().insert(body);
        response
    }
}

impl ApiError {
    fn log_detail(&self) -> String {
        match self {
            Self::Lifecycle(error) => error.to_string(),
            other => other.message(),
        }
    }
}
