//! The body of `POST /v1/credentials`, read before the token is looked at. Apart from the
//! handler so that it parses without the server (the `credentials_request` fuzz target).

use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use crate::ci::NamedJob;
use crate::lifecycle::ExchangeRequest;
#[cfg(feature = "server")]
use crate::lifecycle::{MAX_ROLE_NAME_CHARS, MAX_ROLES_PER_EXCHANGE};

/// Roles to mint for the job; all are granted or none is.
#[derive(Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CredentialsRequest {
    #[cfg_attr(feature = "server", schema(schema_with = role_names))]
    pub roles: Vec<String>,
    /// Clamped to each role's `max_ttl`; the role's `max_ttl` when absent.
    #[serde(default, deserialize_with = "whole_seconds")]
    #[cfg_attr(feature = "server", schema(minimum = 1, nullable = false))]
    pub ttl_seconds: Option<u64>,
    /// Azure Pipelines only: the job within the run that the credentials are for, its
    /// `System.JobId` and `System.JobAttempt`. Bound to it once the run's timeline shows that
    /// attempt running; without it, the credentials are bound to the whole run. Refused with
    /// `invalid_request` for any other CI, whose token names its job itself.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(schema_with = named_job, nullable = false))]
    pub job: Option<NamedJob>,
}

impl CredentialsRequest {
    /// The body as sent; the error is the `invalid_request` message.
    pub fn parse(body: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(body).map_err(|e| format!("the body must be JSON like {{\"roles\": [\"name\"]}}: {e}"))
    }
}

impl From<CredentialsRequest> for ExchangeRequest {
    fn from(request: CredentialsRequest) -> Self {
        Self {
            roles: request.roles,
            ttl: request.ttl_seconds.map(Duration::from_secs),
            job: request.job,
            address: None,
        }
    }
}

/// JSON Schema's `integer` includes `600.0`, so the document admits it; serde's `u64` alone would
/// refuse it.
fn whole_seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(seconds) = number.as_u64() {
        return Ok(Some(seconds));
    }
    // `u64::MAX as f64` is 2^64, one past the largest u64: the bound is exclusive.
    match number.as_f64() {
        Some(seconds) if seconds.fract() == 0.0 && (0.0..u64::MAX as f64).contains(&seconds) => {
            Ok(Some(seconds as u64))
        }
        _ => Err(D::Error::custom(format!("`ttl_seconds` must be a whole number of seconds, not {number}"))),
    }
}

/// The bounds `check_request` enforces, from its own constants, so the document cannot drift.
#[cfg(feature = "server")]
fn role_names() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let name = ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)).max_length(Some(MAX_ROLE_NAME_CHARS));
    ArrayBuilder::new()
        .items(name)
        .min_items(Some(1))
        .max_items(Some(MAX_ROLES_PER_EXCHANGE))
        .description(Some(format!(
            "1 to {MAX_ROLES_PER_EXCHANGE} role names, each 1 to {MAX_ROLE_NAME_CHARS} characters."
        )))
        .build()
}

/// The bounds `NamedJob::new` enforces, from its own constants.
#[cfg(feature = "server")]
fn named_job() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let id = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(NamedJob::ID_PATTERN))
        .min_length(Some(36))
        .max_length(Some(36))
        .description(Some("The job's record in the run's timeline (`System.JobId`), a GUID."));
    let attempt = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .maximum(Some(NamedJob::MAX_ATTEMPT))
        .description(Some("`System.JobAttempt`."));
    ObjectBuilder::new()
        .property("id", id)
        .property("attempt", attempt)
        .required("id")
        .required("attempt")
        .description(Some(
            "Azure Pipelines only: the job within the run (`System.JobId`, `System.JobAttempt`) the credentials are bound to, once the run's timeline shows it running.",
        ))
        .build()
}
