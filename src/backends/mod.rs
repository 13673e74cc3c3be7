//! How credentials are minted and revoked: one module per backend behind one trait. Backends
//! know nothing of HTTP requests or policy files; they get a job, a scope and a TTL.

#[cfg(feature = "server")]
pub mod aws;
mod config;
#[cfg(feature = "server")]
pub mod github_app;
#[cfg(feature = "server")]
pub mod vault;

pub use config::{
    AwsConfig, GithubAppConfig, KUBERNETES_TOKEN_FILE, LoginMethod, SecretId, SecretIdSource, VaultAuthConfig,
    VaultConfig, VaultCredentials,
};

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::ci::Job;

#[derive(Debug, Error)]
pub enum Error {
    /// The backend could not be reached or failed; the exchange may be retried.
    #[error("{backend} is unavailable: {reason}")]
    Unavailable { backend: &'static str, reason: String },
    /// The backend answered, but refused what was asked (a misconfiguration, not the job's
    /// fault). `code` is the backend's own error code, fit to show the caller; `reason` is for the log.
    #[error("{backend} refused the request ({code}): {reason}")]
    Refused { backend: &'static str, code: String, reason: String },
    /// The backend asked the broker to wait (a rate limit) this many seconds.
    #[error("{backend} is rate limiting the broker; retry in {retry_after_seconds} s")]
    Throttled { backend: &'static str, retry_after_seconds: u64 },
    /// The role names a backend this broker has no configuration for.
    #[error("backend `{0}` is not configured on this broker")]
    NotConfigured(&'static str),
    /// A revoke handle reached a backend that did not mint it (a bug, not an outage).
    #[error("backend `{0}` was given another backend's revoke handle")]
    WrongHandle(&'static str),
}

/// A minted credential as handed to the job. Secret parts redact on `Debug`.
#[derive(Debug)]
pub enum Credential {
    Vault {
        address: String,
        token: SecretString,
        accessor: String,
        /// The role's dynamic secret (`data` as JSON text), read with `token`, dying with it.
        secret: Option<SecretString>,
    },
    Aws {
        access_key_id: SecretString,
        secret_access_key: SecretString,
        session_token: SecretString,
        region: String,
    },
    /// A GitHub App installation token; the lease's expiry is when the broker revokes it.
    GithubApp {
        token: SecretString,
        permissions: std::collections::BTreeMap<String, String>,
        /// The repositories' names, as GitHub granted them.
        repositories: Vec<String>,
    },
}

/// The handle that revokes one credential; stored with its lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokeHandle {
    Vault {
        accessor: String,
    },
    /// An STS session cannot be revoked: its source identity is denied on its role until
    /// `expires_at` (unix seconds), when the session is dead anyway.
    Aws {
        role_arn: String,
        source_identity: String,
        expires_at: i64,
    },
    /// A GitHub installation token is revoked with itself: it is kept sealed under a key derived
    /// from the App's private key (`backends/github_app/seal.rs`), until GitHub's own `expires_at`.
    #[serde(rename = "github")]
    GithubApp {
        token_sha256: String,
        sealed_token: String,
        expires_at: i64,
    },
}

impl RevokeHandle {
    /// The handle as audit events show it: a GitHub token by its SHA-256 only.
    pub fn public(&self) -> serde_json::Value {
        match self {
            Self::GithubApp { token_sha256, expires_at, .. } => {
                serde_json::json!({ "github": { "token_sha256": token_sha256, "expires_at": expires_at } })
            }
            other => serde_json::to_value(other).unwrap_or_default(),
        }
    }
}

/// `serialize_with` for a handle in an audit event.
pub fn serialize_public_handle<S: serde::Serializer>(handle: &&RevokeHandle, serializer: S) -> Result<S::Ok, S::Error> {
    handle.public().serialize(serializer)
}

#[derive(Debug)]
pub struct Minted {
    pub credential: Credential,
    pub handle: RevokeHandle,
    /// When the backend says the credential expires, if it says so.
    pub expires_at: Option<time::OffsetDateTime>,
    /// What the credential still needs once its handle is durable, before it is handed out.
    pub confirmation: Option<Confirmation>,
}

/// The step that makes a credential whole once the broker can revoke it: until then it lives
/// only a short grace, so a crash before its handle was recorded leaves nothing alive for long.
#[derive(Debug)]
pub enum Confirmation {
    /// A Vault token created to live its mint grace: extended to `ttl` by its accessor.
    VaultExtend { accessor: String, ttl: Duration, created: std::time::Instant },
}

/// What a backend is asked to mint: the role's scope, bound to one job, for `ttl`.
pub struct MintRequest<'a, S> {
    pub job: &'a Job,
    pub role: &'a str,
    pub scope: &'a S,
    pub ttl: Duration,
    /// The address block the credential must work only from, for a role with
    /// `bind_to_address`; `None` for an unbound role.
    pub bind: Option<ipnet::IpNet>,
}

/// Every configured backend; a role or a revoke handle picks one.
#[cfg(feature = "server")]
#[derive(Default)]
pub struct Backends {
    pub vault: Option<vault::VaultBackend>,
    pub aws: Option<aws::AwsBackend>,
    pub github_app: Option<github_app::GithubAppBackend>,
}

#[cfg(feature = "server")]
impl Backends {
    pub fn vault(&self) -> Result<&vault::VaultBackend, Error> {
        self.vault.as_ref().ok_or(Error::NotConfigured("vault"))
    }

    pub fn aws(&self) -> Result<&aws::AwsBackend, Error> {
        self.aws.as_ref().ok_or(Error::NotConfigured("aws"))
    }

    pub fn github_app(&self) -> Result<&github_app::GithubAppBackend, Error> {
        self.github_app.as_ref().ok_or(Error::NotConfigured("github"))
    }

    pub async fn revoke(&self, handle: &RevokeHandle) -> Result<(), Error> {
        match handle {
            RevokeHandle::Vault { .. } => self.vault()?.revoke(handle).await,
            RevokeHandle::Aws { .. } => self.aws()?.revoke(handle).await,
            RevokeHandle::GithubApp { .. } => self.github_app()?.revoke(handle).await,
        }
    }

    /// Confirms a credential whose handle is now durable (see [`Confirmation`]).
    pub async fn confirm(&self, confirmation: &Confirmation) -> Result<(), Error> {
        match confirmation {
            Confirmation::VaultExtend { accessor, ttl, created } => {
                self.vault()?.extend(accessor, *ttl, *created).await
            }
        }
    }

    /// Housekeeping for the sweeper: forgets AWS deny-list entries whose sessions expired.
    pub async fn prune(&self) {
        if let Some(aws) = &self.aws {
            aws.prune().await;
        }
    }

    /// Whether every configured backend answers.
    pub async fn check(&self) -> Result<(), Error> {
        if let Some(vault) = &self.vault {
            vault.check().await?;
        }
        if let Some(aws) = &self.aws {
            aws.check().await?;
        }
        if let Some(github) = &self.github_app {
            github.check().await?;
        }
        Ok(())
    }
}

/// One kind of credential. `mint` must return a handle that `revoke` accepts; `revoke` of an
/// already revoked or expired credential succeeds.
pub trait Backend {
    type Scope;

    fn mint(&self, request: MintRequest<'_, Self::Scope>) -> impl Future<Output = Result<Minted, Error>> + Send;
    fn revoke(&self, handle: &RevokeHandle) -> impl Future<Output = Result<(), Error>> + Send;
    /// Whether the backend answers, for readiness.
    fn check(&self) -> impl Future<Output = Result<(), Error>> + Send;
}
