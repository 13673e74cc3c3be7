//! Vault/OpenBao: a token per job with exactly the role's policies, its TTL and metadata naming
//! the job; revoked by accessor.

use std::collections::HashMap;

use secrecy::{ExposeSecret, SecretString};
use vaultrs::api::token::requests::CreateTokenRequestBuilder;
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
}

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
        Ok(Self { address: config.address.trim_end_matches('/').to_owned(), client, http })
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
        let mut meta = HashMap::from([
            ("issuer".to_owned(), job.issuer.clone()),
            ("job_id".to_owned(), job.job_id.clone()),
            ("repository".to_owned(), job.repository.clone()),
            ("role".to_owned(), request.role.to_owned()),
        ]);
        if let Some(git_ref) = &job.git_ref {
            meta.insert("ref".to_owned(), git_ref.clone());
        }
        let ttl = format!("{}s", request.ttl.as_secs());
        let mut options = CreateTokenRequestBuilder::default();
        options
            .policies(request.scope.policies.clone())
            .no_default_policy(true)
            .ttl(ttl.clone())
            .explicit_max_ttl(ttl)
            .renewable(false)
            .display_name(format!("ci-creds-{}", request.role))
            .meta(meta);
        let auth = vaultrs::token::new(&self.client, Some(&mut options)).await.map_err(classify)?;
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
        ClientError::APIError { code, errors } if (400..500).contains(&code) => {
            Error::Refused { backend: NAME, code: format!("HTTP {code}"), reason: errors.join("; ") }
        }
        ClientError::APIError { code, errors } => {
            Error::Unavailable { backend: NAME, reason: format!("HTTP {code}: {}", errors.join("; ")) }
        }
        ClientError::RestClientError { .. } => {
            Error::Unavailable { backend: NAME, reason: "cannot reach Vault".into() }
        }
        other => Error::Unavailable { backend: NAME, reason: other.to_string() },
    }
}
