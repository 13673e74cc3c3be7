//! How credentials are minted and revoked: one module per backend behind one trait. Backends
//! know nothing of HTTP requests or policy files; they get a job, a scope and a TTL.

pub mod vault;

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::job::Job;

#[derive(Debug, Error)]
pub enum Error {
    /// The backend could not be reached or failed; the exchange may be retried.
    #[error("{backend} is unavailable: {reason}")]
    Unavailable { backend: &'static str, reason: String },
    /// The backend answered, but refused what was asked (a misconfiguration, not the job's fault).
    #[error("{backend} refused the request: {reason}")]
    Refused { backend: &'static str, reason: String },
    /// The role names a backend this broker has no configuration for.
    #[error("backend `{0}` is not configured on this broker")]
    NotConfigured(&'static str),
}

/// A minted credential as handed to the job. Secret parts redact on `Debug`.
#[derive(Debug)]
pub enum Credential {
    Vault { address: String, token: SecretString, accessor: String },
}

/// The non-secret handle that revokes one credential; stored with its lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevokeHandle {
    Vault { accessor: String },
}

#[derive(Debug)]
pub struct Minted {
    pub credential: Credential,
    pub handle: RevokeHandle,
}

/// What a backend is asked to mint: the role's scope, bound to one job, for `ttl`.
pub struct MintRequest<'a, S> {
    pub job: &'a Job,
    pub role: &'a str,
    pub scope: &'a S,
    pub ttl: Duration,
}

/// Every configured backend; a role or a revoke handle picks one.
#[derive(Default)]
pub struct Backends {
    pub vault: Option<vault::VaultBackend>,
}

impl Backends {
    pub fn vault(&self) -> Result<&vault::VaultBackend, Error> {
        self.vault.as_ref().ok_or(Error::NotConfigured("vault"))
    }

    pub async fn revoke(&self, handle: &RevokeHandle) -> Result<(), Error> {
        match handle {
            RevokeHandle::Vault { .. } => self.vault()?.revoke(handle).await,
        }
    }

    /// Whether every configured backend answers.
    pub async fn check(&self) -> Result<(), Error> {
        if let Some(vault) = &self.vault {
            vault.check().await?;
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
