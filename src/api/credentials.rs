//! `POST /v1/credentials`: a CI token in, job-bound credentials out.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;

use super::body::read_limited;
use super::{ApiError, MAX_BODY_BYTES};
use crate::backends::Credential;
use crate::lifecycle::{Broker, ExchangeRequest, Exchanged};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsRequest {
    roles: Vec<String>,
    #[serde(default)]
    ttl_seconds: Option<u64>,
}

#[derive(Serialize)]
pub struct CredentialsResponse {
    job: JobSummary,
    credentials: Vec<CredentialBody>,
}

#[derive(Serialize)]
struct JobSummary {
    issuer: String,
    job_id: String,
    repository: String,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
}

#[derive(Serialize)]
struct CredentialBody {
    role: String,
    backend: &'static str,
    lease_id: String,
    expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    vault: Option<VaultCredential>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aws: Option<AwsCredential>,
}

#[derive(Serialize)]
struct AwsCredential {
    #[serde(serialize_with = "expose")]
    access_key_id: SecretString,
    #[serde(serialize_with = "expose")]
    secret_access_key: SecretString,
    #[serde(serialize_with = "expose")]
    session_token: SecretString,
    region: String,
}

#[derive(Serialize)]
struct VaultCredential {
    address: String,
    #[serde(serialize_with = "expose")]
    token: SecretString,
    accessor: String,
}

/// The one place a credential's secret leaves its redacting type: the response to its job.
fn expose<S: Serializer>(secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose_secret())
}

pub async fn create(
    State(broker): State<Arc<Broker>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<CredentialsResponse>, ApiError> {
    let body = read_limited(body, MAX_BODY_BYTES).await?;
    let request: CredentialsRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::InvalidRequest(format!("the body must be JSON like {{\"roles\": [\"name\"]}}: {e}")))?;
    let token = bearer_token(&headers)?;
    let exchanged = broker
        .exchange(
            token.expose_secret(),
            ExchangeRequest { roles: request.roles, ttl: request.ttl_seconds.map(Duration::from_secs) },
        )
        .await?;
    Ok(Json(response(exchanged)))
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
            let (backend, vault, aws) = match issued.credential {
                Credential::Vault { address, token, accessor } => {
                    ("vault", Some(VaultCredential { address, token, accessor }), None)
                }
                Credential::Aws { access_key_id, secret_access_key, session_token, region } => {
                    ("aws", None, Some(AwsCredential { access_key_id, secret_access_key, session_token, region }))
                }
            };
            CredentialBody {
                role: issued.role,
                backend,
                lease_id: issued.lease_id,
                expires_at: issued.expires_at.format(&Rfc3339).unwrap_or_default(),
                vault,
                aws,
            }
        })
        .collect();
    CredentialsResponse {
        job: JobSummary { issuer: job.issuer, job_id: job.job_id, repository: job.repository, git_ref: job.git_ref },
        credentials,
    }
}
