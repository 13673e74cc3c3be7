//! `POST /v1/credentials`: a CI token in, job-bound credentials out.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, header};
use axum::{Extension, Json};
use secrecy::{ExposeSecret, SecretString};
use serde::{Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

use super::body::read_limited;
use super::credentials_request::CredentialsRequest;
use super::exchange_address::{TrustedProxies, X_FORWARDED_FOR, exchange_address};
use super::openapi::ErrorResponse;
use super::{ApiError, MAX_BODY_BYTES};
use crate::backends::Credential;
use crate::lifecycle::{Exchange, ExchangeRequest, Exchanged, MAX_ROLES_PER_EXCHANGE};
use crate::metrics;

#[derive(Serialize, ToSchema)]
pub struct CredentialsResponse {
    job: JobSummary,
    credentials: Vec<CredentialBody>,
}

#[derive(Serialize, ToSchema)]
struct JobSummary {
    issuer: String,
    job_id: String,
    repository: String,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
}

#[derive(Serialize, ToSchema)]
struct CredentialBody {
    role: String,
    #[schema(value_type = String, example = "vault")]
    backend: &'static str,
    lease_id: String,
    #[schema(format = DateTime)]
    expires_at: String,
    /// The address block the credential works only from, when its role has `bind_to_address`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, nullable = false, example = "203.0.113.7/32")]
    bound_to: Option<ipnet::IpNet>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    vault: Option<VaultCredential>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    aws: Option<AwsCredential>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    github: Option<GithubCredential>,
}

/// A GitHub App installation token, revoked by the broker at `expires_at` or the job's end.
#[derive(Serialize, ToSchema)]
struct GithubCredential {
    /// Its format and length are GitHub's, and changing: treat it as opaque.
    #[serde(serialize_with = "expose")]
    #[schema(value_type = String)]
    token: SecretString,
    /// When the broker revokes it (the lease's expiry), not GitHub's hour.
    #[schema(format = DateTime)]
    expires_at: String,
    /// Permission name to level, as GitHub granted them.
    permissions: std::collections::BTreeMap<String, String>,
    /// Repository names.
    repositories: Vec<String>,
}

#[derive(Serialize, ToSchema)]
struct AwsCredential {
    #[serde(serialize_with = "expose")]
    #[schema(value_type = String)]
    access_key_id: SecretString,
    #[serde(serialize_with = "expose")]
    #[schema(value_type = String)]
    secret_access_key: SecretString,
    #[serde(serialize_with = "expose")]
    #[schema(value_type = String)]
    session_token: SecretString,
    region: String,
}

#[derive(Serialize, ToSchema)]
struct VaultCredential {
    address: String,
    #[serde(serialize_with = "expose")]
    #[schema(value_type = String)]
    token: SecretString,
    accessor: String,
    /// The role's dynamic secret (Vault's `data`), when the role names a `secret_path`.
    #[serde(serialize_with = "expose_json", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    secret: Option<SecretString>,
}

/// The one place a credential's secret leaves its redacting type: the response to its job.
fn expose<S: Serializer>(secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose_secret())
}

/// A secret held as JSON text, written into the answer as the JSON it is.
fn expose_json<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    let raw = secret.as_ref().map(|secret| serde_json::value::RawValue::from_string(secret.expose_secret().to_owned()));
    match raw {
        Some(Ok(raw)) => raw.serialize(serializer),
        Some(Err(_)) | None => serializer.serialize_none(),
    }
}

#[utoipa::path(post, path = "/v1/credentials", tag = "credentials",
    request_body = CredentialsRequest,
    security(("ci_oidc_token" = [])),
    responses(
        (status = 200, description = "Every requested role's credential", body = CredentialsResponse),
        (status = 400, description = "`invalid_request`; `invalid_forwarded_for` (a trusted proxy's `X-Forwarded-For` is not a list of IP addresses, or is too long)", body = ErrorResponse),
        (status = 401, description = "`invalid_token`, `unsubstituted_claim`, `unknown_issuer`", body = ErrorResponse),
        (status = 403, description = "`access_denied`, with `denied`; `runner_reused` (a single-use tier's runner served another job); `runner_unknown` (a single-use tier's runner cannot be told from others); `exchange_cap_reached` (the job has had a role `max_exchanges_per_job` times); `address_unknown` (a role bound to the job's address, and the address is not known)", body = ErrorResponse),
        (status = 409, description = "`token_replayed`, `job_ended`", body = ErrorResponse),
        (status = 408, description = "`request_timeout`: the request did not arrive in full within `limits.request_timeout`", body = ErrorResponse),
        (status = 413, description = "`payload_too_large`", body = ErrorResponse),
        (status = 502, description = "`backend_refused`: the backend refused the broker (misconfiguration)", body = ErrorResponse),
        (status = 503, description = "`backend_unavailable`, `issuer_unavailable`, `store_unavailable`, `ci_unavailable` (the CI's API could not confirm the job runs, with `on_unavailable = \"refuse\"`); `overloaded`, with `Retry-After`", body = ErrorResponse),
    ))]
pub async fn create(
    State(exchange): State<Arc<Exchange>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    trusted_proxies: Option<Extension<Arc<TrustedProxies>>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<CredentialsResponse>, ApiError> {
    let started = Instant::now();
    let mut roles = Vec::new();
    let mut repository = None;
    let trusted_proxies = trusted_proxies.map(|Extension(trusted)| trusted).unwrap_or_default();
    let address = peer
        .map(|Extension(ConnectInfo(peer))| {
            let forwarded_for = headers.get_all(X_FORWARDED_FOR).iter().map(|line| line.as_bytes());
            exchange_address(peer.ip(), forwarded_for, &trusted_proxies)
        })
        .transpose()
        .map_err(ApiError::InvalidForwardedFor);
    let result = match address {
        Ok(address) => attempt(&exchange, &headers, body, address, &mut roles, &mut repository).await,
        Err(error) => Err(error),
    };
    let code = result.as_ref().map_or_else(ApiError::code, |_| "granted");
    metrics::exchange(code, &role_labels(&exchange, &roles), repository.as_deref(), started.elapsed());
    Ok(Json(response(result?)))
}

async fn attempt(
    exchange: &Exchange,
    headers: &HeaderMap,
    body: Body,
    address: Option<IpAddr>,
    roles: &mut Vec<String>,
    repository: &mut Option<String>,
) -> Result<Exchanged, ApiError> {
    let body = read_limited(body, MAX_BODY_BYTES).await?;
    let request = CredentialsRequest::parse(&body).map_err(ApiError::InvalidRequest)?;
    roles.clone_from(&request.roles);
    let token = bearer_token(headers)?;
    let request = ExchangeRequest { address, ..request.into() };
    let attempt = exchange.attempt_exchange(token.expose_secret(), request).await;
    *repository = attempt.repository;
    Ok(attempt.result?)
}

/// Requested roles as metric labels: the policy's names only, so a caller cannot mint labels.
fn role_labels(exchange: &Exchange, requested: &[String]) -> Vec<String> {
    let mut labels: Vec<String> = requested
        .iter()
        .take(MAX_ROLES_PER_EXCHANGE)
        .map(|role| if exchange.defines_role(role) { role.clone() } else { "undefined".into() })
        .collect();
    labels.sort();
    labels.dedup();
    if labels.is_empty() {
        labels.push("none".into());
    }
    labels
}

pub(super) fn bearer_token(headers: &HeaderMap) -> Result<SecretString, ApiError> {
    let value = headers.get(header::AUTHORIZATION).ok_or(ApiError::MissingToken)?;
    let value = value.to_str().map_err(|_| ApiError::MissingToken)?;
    let (scheme, token) = value.split_once(' ').ok_or(ApiError::MissingToken)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::MissingToken);
    }
    Ok(SecretString::from(token.trim().to_owned()))
}

fn response(exchanged: Exchanged) -> CredentialsResponse {
    let job = exchanged.job;
    let credentials = exchanged
        .credentials
        .into_iter()
        .map(|issued| {
            let expires_at = issued.expires_at.format(&Rfc3339).unwrap_or_default();
            let (backend, vault, aws, github) = match issued.credential {
                Credential::Vault { address, token, accessor, secret } => {
                    ("vault", Some(VaultCredential { address, token, accessor, secret }), None, None)
                }
                Credential::Aws { access_key_id, secret_access_key, session_token, region } => {
                    ("aws", None, Some(AwsCredential { access_key_id, secret_access_key, session_token, region }), None)
                }
                Credential::GithubApp { token, permissions, repositories } => (
                    "github",
                    None,
                    None,
                    Some(GithubCredential { token, expires_at: expires_at.clone(), permissions, repositories }),
                ),
            };
            CredentialBody {
                role: issued.role,
                backend,
                lease_id: issued.lease_id,
                expires_at,
                bound_to: issued.bound_to,
                vault,
                aws,
                github,
            }
        })
        .collect();
    CredentialsResponse {
        job: JobSummary { issuer: job.issuer, job_id: job.job_id, repository: job.repository, git_ref: job.git_ref },
        credentials,
    }
}
