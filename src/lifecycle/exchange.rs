//! One exchange: verify the token, decide every requested role, refuse a replay, then mint each
//! role's credential behind a lease written first. All roles are granted or none is.

use std::time::Duration;

use time::OffsetDateTime;

use super::Error;
use crate::backends::vault::VaultBackend;
use crate::backends::{self, Backend, Credential, MintRequest, Minted, RevokeHandle};
use crate::identity::Verifier;
use crate::job::Job;
use crate::policy::{BackendKind, Decision, PolicySet, Role};
use crate::store::{LeaseState, NewLease, Store};

/// More roles than any job needs in one exchange; bounds the work one request can cause.
pub const MAX_ROLES_PER_EXCHANGE: usize = 16;
const MAX_ROLE_NAME_BYTES: usize = 128;

pub struct ExchangeRequest {
    pub roles: Vec<String>,
    /// Clamped to each role's `max_ttl`; the role's `max_ttl` when absent.
    pub ttl: Option<Duration>,
}

pub struct IssuedCredential {
    pub role: String,
    pub lease_id: String,
    pub expires_at: OffsetDateTime,
    pub credential: Credential,
    pub handle: RevokeHandle,
}

pub struct Exchanged {
    pub job: Job,
    pub credentials: Vec<IssuedCredential>,
}

/// Everything an exchange needs, shared by all requests.
pub struct Broker {
    pub verifier: Verifier,
    pub policy: PolicySet,
    pub store: Store,
    pub vault: Option<VaultBackend>,
}

impl Broker {
    pub async fn exchange(
        &self,
        token: &str,
        request: ExchangeRequest,
    ) -> Result<Exchanged, Error> {
        check_request(&request)?;
        let job = self.verifier.verify(token).await?;
        let roles = match self.policy.decide(&job, &request.roles) {
            Decision::Granted(roles) => roles,
            Decision::Denied(denials) => {
                tracing::info!(issuer = %job.issuer, job_id = %job.job_id, repository = %job.repository, "exchange denied");
                return Err(Error::Denied(denials));
            }
        };
        if !self
            .store
            .record_exchange(&job.issuer, &job.token_id, job.expires_at)
            .await?
        {
            tracing::warn!(issuer = %job.issuer, job_id = %job.job_id, "token replayed");
            return Err(Error::Replayed);
        }
        let mut issued = Vec::with_capacity(roles.len());
        for role in roles {
            match self.mint(&job, role, request.ttl).await {
                Ok(credential) => issued.push(credential),
                Err(error) => {
                    self.undo(&issued).await;
                    return Err(error);
                }
            }
        }
        tracing::info!(
            issuer = %job.issuer, job_id = %job.job_id, repository = %job.repository,
            roles = ?issued.iter().map(|c| c.role.as_str()).collect::<Vec<_>>(),
            "credentials issued"
        );
        Ok(Exchanged {
            job,
            credentials: issued,
        })
    }

    async fn mint(
        &self,
        job: &Job,
        role: &Role,
        ttl: Option<Duration>,
    ) -> Result<IssuedCredential, Error> {
        let ttl = ttl.map_or(role.max_ttl, |ttl| ttl.min(role.max_ttl));
        let expires_at = OffsetDateTime::now_utc() + ttl;
        let lease_id = uuid::Uuid::new_v4().to_string();
        let backend_name = backend_name(role.backend);
        self.store
            .begin_lease(&NewLease {
                id: &lease_id,
                issuer: &job.issuer,
                job_id: &job.job_id,
                role: &role.name,
                backend: backend_name,
                expires_at: expires_at.unix_timestamp(),
            })
            .await?;
        let minted = match self.mint_with_backend(job, role, ttl).await {
            Ok(minted) => minted,
            Err(error) => {
                tracing::warn!(role = %role.name, %error, "minting failed");
                self.store
                    .set_lease_state(&lease_id, LeaseState::Failed)
                    .await?;
                return Err(error.into());
            }
        };
        if let Err(error) = self.store.activate_lease(&lease_id, &minted.handle).await {
            // The credential exists but its lease could not be recorded: take it back now.
            self.revoke(&lease_id, &minted.handle).await;
            return Err(error.into());
        }
        Ok(IssuedCredential {
            role: role.name.clone(),
            lease_id,
            expires_at,
            credential: minted.credential,
            handle: minted.handle,
        })
    }

    async fn mint_with_backend(
        &self,
        job: &Job,
        role: &Role,
        ttl: Duration,
    ) -> Result<Minted, backends::Error> {
        match role.backend {
            BackendKind::Vault => {
                let vault = self
                    .vault
                    .as_ref()
                    .ok_or(backends::Error::NotConfigured("vault"))?;
                let scope = role
                    .vault
                    .as_ref()
                    .ok_or(backends::Error::NotConfigured("vault"))?;
                vault
                    .mint(MintRequest {
                        job,
                        role: &role.name,
                        scope,
                        ttl,
                    })
                    .await
            }
        }
    }

    /// Revokes what an exchange already minted when a later role failed: all or nothing.
    async fn undo(&self, issued: &[IssuedCredential]) {
        for credential in issued {
            if let Err(error) = self
                .store
                .set_lease_state(&credential.lease_id, LeaseState::Revoking)
                .await
            {
                tracing::error!(lease_id = %credential.lease_id, %error, "cannot mark lease for revocation");
            }
            self.revoke(&credential.lease_id, &credential.handle).await;
        }
    }

    async fn revoke(&self, lease_id: &str, handle: &RevokeHandle) {
        let result = match handle {
            RevokeHandle::Vault { .. } => match &self.vault {
                Some(vault) => vault.revoke(handle).await,
                None => Err(backends::Error::NotConfigured("vault")),
            },
        };
        match result {
            Ok(()) => {
                if let Err(error) = self
                    .store
                    .set_lease_state(lease_id, LeaseState::Revoked)
                    .await
                {
                    tracing::error!(%lease_id, %error, "revoked, but cannot record it");
                }
            }
            // The lease stays `revoking`, for the revocation queue to retry.
            Err(error) => tracing::error!(%lease_id, %error, "revocation failed"),
        }
    }
}

fn backend_name(kind: BackendKind) -> &'static str {
    match kind {
        BackendKind::Vault => "vault",
    }
}

fn check_request(request: &ExchangeRequest) -> Result<(), Error> {
    if request.roles.is_empty() {
        return Err(Error::InvalidRequest(
            "`roles` must name at least one role".into(),
        ));
    }
    if request.roles.len() > MAX_ROLES_PER_EXCHANGE {
        return Err(Error::InvalidRequest(format!(
            "at most {MAX_ROLES_PER_EXCHANGE} roles per request"
        )));
    }
    if request
        .roles
        .iter()
        .any(|role| role.is_empty() || role.len() > MAX_ROLE_NAME_BYTES)
    {
        return Err(Error::InvalidRequest(format!(
            "a role name must be 1 to {MAX_ROLE_NAME_BYTES} bytes"
        )));
    }
    if request.ttl.is_some_and(|ttl| ttl.is_zero()) {
        return Err(Error::InvalidRequest(
            "`ttl_seconds` must be positive".into(),
        ));
    }
    Ok(())
}
