//! Vault/OpenBao: a token per job with exactly the role's policies, its TTL and metadata naming
//! the job; revoked by accessor. It lives only a short grace until its accessor is recorded
//! (`mint_grace.rs`).

mod mint_grace;

use std::time::Duration;

use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use url::Url;
use vaultrs::client::{VaultClient, VaultClientSettingsBuilder};
use vaultrs::error::ClientError;

pub use super::config::VaultConfig;
use super::{Backend, Credential, Error, MintRequest, Minted, RevokeHandle};
use crate::net::HttpClient;
use crate::policy::VaultScope;

const NAME: &str = "vault";

pub struct VaultBackend {
    address: String,
    client: VaultClient,
    http: HttpClient,
    /// The token create, called directly: the exchange's one Vault call, where vaultrs's
    /// request building (URL parsed, headers and middleware per call) cost about a hundred
    /// allocations an exchange.
    token_create: Url,
    /// `auth/token/renew-accessor`, which ends a token's mint grace.
    renew_accessor: Url,
    /// The broker's own token, as the header Vault reads it from (sensitive: never printed).
    token_header: HeaderValue,
    timeout: Duration,
    /// How long a job's token lives until its accessor is recorded and it is extended.
    mint_grace: Duration,
}

/// `auth/token/create`'s body: exactly the role's policies, its TTL, metadata naming the job.
#[derive(Serialize)]
struct TokenCreate<'a> {
    policies: &'a [String],
    meta: TokenMeta<'a>,
    no_default_policy: bool,
    ttl: &'a str,
    explicit_max_ttl: &'a str,
    renewable: bool,
    display_name: &'a str,
}

#[derive(Serialize)]
struct TokenMeta<'a> {
    issuer: &'a str,
    job_id: &'a str,
    repository: &'a str,
    role: &'a str,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    git_ref: Option<&'a str>,
}

#[derive(Deserialize)]
struct TokenCreated {
    auth: CreatedAuth,
}

#[derive(Deserialize)]
struct CreatedAuth {
    client_token: String,
    accessor: String,
}

/// Vault's refusal: `{"errors": [...]}`.
#[derive(Deserialize, Default)]
struct Refusal {
    #[serde(default)]
    errors: Vec<String>,
}

/// Larger than any token create's answer.
const MAX_TOKEN_BYTES: usize = 64 * 1024;

impl VaultBackend {
    /// A backend acting with the broker's own Vault `token`.
    pub fn new(config: &VaultConfig, token: &SecretString, http: HttpClient) -> Result<Self, Error> {
        let settings = VaultClientSettingsBuilder::default()
            .address(&config.address)
            .token(token.expose_secret())
            .timeout(Some(std::time::Duration::from_secs(config.timeout_seconds)))
            .build()
            .map_err(|e| Error::Refused { backend: NAME, code: "config".into(), reason: e.to_string() })?;
        let client = VaultClient::new(settings).map_err(classify)?;
        let address = config.address.trim_end_matches('/').to_owned();
        let config_error = |reason: String| Error::Refused { backend: NAME, code: "config".into(), reason };
        let token_create = crate::net::check_url_scheme(&format!("{address}/v1/auth/token/create"))
            .map_err(|reason| config_error(format!("vault.address: {reason}")))?;
        let renew_accessor = crate::net::check_url_scheme(&format!("{address}/v1/auth/token/renew-accessor"))
            .map_err(|reason| config_error(format!("vault.address: {reason}")))?;
        let mut token_header = HeaderValue::from_str(token.expose_secret())
            .map_err(|_| config_error("the Vault token is not a valid header value".into()))?;
        token_header.set_sensitive(true);
        let timeout = Duration::from_secs(config.timeout_seconds);
        let mint_grace = Duration::from_secs(config.mint_grace_seconds);
        Ok(Self { address, client, http, token_create, renew_accessor, token_header, timeout, mint_grace })
    }

    /// Creates the job's token: its secret and its accessor.
    async fn create_token(&self, body: &TokenCreate<'_>) -> Result<CreatedAuth, Error> {
        let (status, answer) = self
            .http
            .post_json_with_secret_header(
                &self.token_create,
                ("X-Vault-Token", &self.token_header),
                body,
                self.timeout,
                MAX_TOKEN_BYTES,
            )
            .await
            .map_err(|_| Error::Unavailable { backend: NAME, reason: "cannot reach Vault".into() })?;
        if status.is_success() {
            let created: TokenCreated = serde_json::from_slice(&answer).map_err(|e| Error::Unavailable {
                backend: NAME,
                reason: format!("the token create's answer does not parse: {e}"),
            })?;
            return Ok(created.auth);
        }
        let errors = serde_json::from_slice::<Refusal>(&answer).unwrap_or_default().errors;
        Err(answered(status.as_u16(), &errors))
    }
}

impl VaultBackend {
    /// Reads `path` with the job's own token, so the secret's lease is that token's child and
    /// Vault revokes it with the token. Only `data` is kept; it is a secret.
    async fn read_dynamic_secret(&self, path: &str, token: &SecretString) -> Result<SecretString, Error> {
        let url = format!("{}/v1/{path}", self.address);
        let answer: serde_json::Value = self
            .http
            .get_json_with_secret_header(&url, "X-Vault-Token", token, MAX_SECRET_BYTES)
            .await
            .map_err(|reason| Error::Unavailable { backend: NAME, reason: format!("reading {path}: {reason}") })?;
        let data = answer.get("data").filter(|data| data.is_object()).ok_or_else(|| Error::Refused {
            backend: NAME,
            code: "no_data".into(),
            reason: format!("{path} returned no `data`"),
        })?;
        Ok(SecretString::from(data.to_string()))
    }
}

/// Larger than any dynamic secret's answer.
const MAX_SECRET_BYTES: usize = 256 * 1024;

impl Backend for VaultBackend {
    type Scope = VaultScope;

    async fn mint(&self, request: MintRequest<'_, VaultScope>) -> Result<Minted, Error> {
        let job = request.job;
        let lifetime = mint_grace::lifetime(request.ttl, self.mint_grace);
        let ttl = format!("{}s", lifetime.initial_seconds);
        let max_ttl = format!("{}s", lifetime.max_seconds);
        let display_name = format!("ci-creds-{}", request.role);
        let created = std::time::Instant::now();
        let auth = self
            .create_token(&TokenCreate {
                policies: &request.scope.policies,
                meta: TokenMeta {
                    issuer: &job.issuer,
                    job_id: &job.job_id,
                    repository: &job.repository,
                    role: request.role,
                    git_ref: job.git_ref.as_deref(),
                },
                no_default_policy: true,
                ttl: &ttl,
                explicit_max_ttl: &max_ttl,
                // Renewable only so that the broker can end its grace: the explicit max TTL is
                // the role's, and no renewal, the job's own included, passes it.
                renewable: lifetime.extend,
                display_name: &display_name,
            })
            .await?;
        let token = SecretString::from(auth.client_token);
        let handle = RevokeHandle::Vault { accessor: auth.accessor.clone() };
        let secret = match &request.scope.secret_path {
            None => None,
            Some(path) => match self.read_dynamic_secret(path, &token).await {
                Ok(secret) => Some(secret),
                Err(error) => {
                    // The token is of no use without its secret: take it back before failing.
                    if let Err(revoke_error) = self.revoke(&handle).await {
                        tracing::warn!(error = %revoke_error, "revoking a token whose secret could not be read failed");
                    }
                    return Err(error);
                }
            },
        };
        Ok(Minted {
            credential: Credential::Vault {
                address: self.address.clone(),
                token,
                accessor: auth.accessor.clone(),
                secret,
            },
            confirmation: Self::confirmation(&auth.accessor, request.ttl, &lifetime, created),
            handle: RevokeHandle::Vault { accessor: auth.accessor },
            expires_at: None,
        })
    }

    async fn revoke(&self, handle: &RevokeHandle) -> Result<(), Error> {
        let RevokeHandle::Vault { accessor } = handle else { return Err(Error::WrongHandle(NAME)) };
        match vaultrs::token::revoke_accessor(&self.client, accessor).await {
            Ok(()) => Ok(()),
            // Vault answers 400 for an accessor it no longer knows: the token is already gone.
            Err(ClientError::APIError { code: 400, .. }) => Ok(()),
            Err(e) => Err(classify(e)),
        }
    }

    async fn check(&self) -> Result<(), Error> {
        // Read directly: vaultrs's health type requires fields OpenBao does not send. A sealed or
        // standby server answers non-2xx here.
        let url = format!("{}/v1/sys/health", self.address);
        self.http.get_ok(&url).await.map_err(|reason| Error::Unavailable { backend: NAME, reason })
    }
}

/// Vault's own refusals (4xx) are misconfiguration; everything else means it is unavailable.
/// Only status codes and Vault's error strings are kept: they carry no token.
fn classify(error: ClientError) -> Error {
    match error {
        ClientError::APIError { code, errors } => answered(code, &errors),
        ClientError::RestClientError { .. } => {
            Error::Unavailable { backend: NAME, reason: "cannot reach Vault".into() }
        }
        other => Error::Unavailable { backend: NAME, reason: other.to_string() },
    }
}

/// Vault's answer of HTTP `code` with its `errors`: a refusal (4xx) or an outage. Only the
/// status and Vault's error strings are kept: they carry no token.
fn answered(code: u16, errors: &[String]) -> Error {
    if (400..500).contains(&code) {
        Error::Refused { backend: NAME, code: format!("HTTP {code}"), reason: errors.join("; ") }
    } else {
        Error::Unavailable { backend: NAME, reason: format!("HTTP {code}: {}", errors.join("; ")) }
    }
}
