//! One exchange: verify the token, decide every requested role, refuse a replay or an ended
//! job, then mint each role's credential behind a lease written first. All or nothing.

use std::net::IpAddr;
use std::time::Duration;

use ipnet::IpNet;
use time::OffsetDateTime;

use super::jobs::keep_until;
use super::judgement::Judgement;
use super::request::{ExchangeRequest, bind_named_job, check_request};
use super::{Error, Exchange};
use crate::audit::{Event, JobIdentity};
use crate::backends::{self, Backend, Credential, MintRequest, Minted, RevokeHandle};
use crate::ci::Job;
use crate::identity::token_sha256;
use crate::policy::{AWS_MIN_SESSION, BackendKind, Role};
use crate::store::{JobCiFacts, LeaseBegun, LeaseState, NewLease, NewLeases, SpentToken};

pub struct IssuedCredential {
    pub role: String,
    pub lease_id: String,
    pub expires_at: OffsetDateTime,
    pub credential: Credential,
    /// The address block the credential works only from, for a role with `bind_to_address`.
    pub bound_to: Option<IpNet>,
}

/// A role's lease as written before its credential is minted.
struct PlannedLease {
    id: String,
    ttl: Duration,
    expires_at: OffsetDateTime,
    /// The address block the credential is bound to, for a role with `bind_to_address`.
    bind: Option<IpNet>,
}

pub struct Exchanged {
    pub job: Job,
    pub credentials: Vec<IssuedCredential>,
}

/// An exchange's result, with the repository that asked when its token verified (for metrics,
/// which label refusals by repository too).
pub struct Attempt {
    pub repository: Option<String>,
    pub result: Result<Exchanged, Error>,
}

impl Exchange {
    pub async fn exchange(&self, token: &str, request: ExchangeRequest) -> Result<Exchanged, Error> {
        self.attempt_exchange(token, request).await.result
    }

    /// The exchange, with every outcome written to the audit trail under the token's SHA-256.
    pub async fn attempt_exchange(&self, token: &str, request: ExchangeRequest) -> Attempt {
        let token_sha256 = token_sha256(token);
        let verified = match check_request(&request) {
            Ok(()) => self.verifier.verify(token).await.map_err(Error::from),
            Err(error) => Err(error),
        };
        let mut job = match verified {
            Ok(job) => job,
            Err(error) => {
                self.audit_refusal(&token_sha256, None, &request, &error);
                return Attempt { repository: None, result: Err(error) };
            }
        };
        let result = match bind_named_job(&mut job, request.job.clone()) {
            Ok(()) => self.exchange_verified(&mut job, &token_sha256, &request).await,
            Err(error) => Err(error),
        };
        match &result {
            Ok((issued, _)) => self.record_runner_job(&job, issued.len(), false),
            // Refusals before the decision (a replay, an ended job) say nothing of the runner.
            Err(Error::Denied(_) | Error::RunnerReused { .. } | Error::RunnerUnknown { .. }) => {
                self.record_runner_job(&job, 0, true)
            }
            Err(_) => {}
        }
        if let Err(error) = &result {
            self.record_refusal(&job, error);
        }
        match &result {
            Ok((issued, ci_liveness)) => self.audit.record(&Event::ExchangeGranted {
                token_sha256: &token_sha256,
                job: JobIdentity::from(&job),
                roles: issued.iter().map(|credential| credential.role.as_str()).collect(),
                ci_liveness: *ci_liveness,
                address: request.address,
            }),
            Err(error) => self.audit_refusal(&token_sha256, Some(&job), &request, error),
        }
        let result = result.map(|(issued, _)| issued);
        Attempt {
            repository: Some(job.repository.clone()),
            result: result.map(|credentials| Exchanged { job, credentials }),
        }
    }

    /// Whether the policy defines `role`: requested roles are metric labels only if so, so
    /// that a caller cannot mint labels.
    pub fn defines_role(&self, role: &str) -> bool {
        self.policy.role(role).is_some()
    }

    fn audit_refusal(&self, token_sha256: &str, job: Option<&Job>, request: &ExchangeRequest, error: &Error) {
        let denied = match error {
            Error::Denied(denials) => Some(denials.as_slice()),
            _ => None,
        };
        self.audit.record(&Event::ExchangeRefused {
            token_sha256,
            job: job.map(JobIdentity::from),
            roles: &request.roles,
            reason: error.to_string(),
            denied,
            address: request.address,
        });
    }

    async fn exchange_verified(
        &self,
        job: &mut Job,
        token_sha256: &str,
        request: &ExchangeRequest,
    ) -> Result<(Vec<IssuedCredential>, Option<&'static str>), Error> {
        let Judgement { roles, ci, liveness } = self.judge(job, request).await?;
        self.claim_single_use(job).await?;
        let planned = self.begin_leases(job, &roles, request, ci).await?;
        // A job within a run ends with the run. Asked once this job's leases are written: a run's
        // end that came before is seen here, and one that comes after finds this job to end.
        if let Some(run) = job.named_job.as_ref().and(job.run_id.as_deref())
            && self.store.job_ended(&job.issuer, run).await?
        {
            self.abandon(&planned).await;
            return Err(Error::JobEnded);
        }
        let mut issued = Vec::with_capacity(roles.len());
        for (n, (role, lease)) in roles.iter().zip(&planned).enumerate() {
            match self.mint(job, token_sha256, role, lease, request.address).await {
                Ok(credential) => issued.push(credential),
                Err(error) => {
                    self.abandon(&planned[n + 1..]).await;
                    self.take_back(&issued).await;
                    return Err(error);
                }
            }
        }
        tracing::info!(
            issuer = %job.issuer, job_id = %job.job_id, repository = %job.repository,
            roles = ?issued.iter().map(|c| c.role.as_str()).collect::<Vec<_>>(),
            "credentials issued"
        );
        Ok((issued, liveness))
    }

    /// Writes the exchange's intent to mint, one pending lease per role, and spends its token,
    /// in one transaction: a replay, an ended job or a role past its cap for the job is refused
    /// before anything is minted, and a store failure leaves the token unspent.
    async fn begin_leases(
        &self,
        job: &Job,
        roles: &[&Role],
        request: &ExchangeRequest,
        ci: JobCiFacts,
    ) -> Result<Vec<PlannedLease>, Error> {
        let now = OffsetDateTime::now_utc();
        let planned: Vec<PlannedLease> = roles
            .iter()
            .map(|role| {
                let ttl = granted_ttl(role, request.ttl);
                // Checked before: a bound role is only reached with an address.
                let bind = role.bind.zip(request.address).map(|(binding, address)| binding.block(address));
                PlannedLease { id: uuid::Uuid::now_v7().to_string(), ttl, expires_at: now + ttl, bind }
            })
            .collect();
        let last_expiry = planned.iter().map(|lease| lease.expires_at.unix_timestamp()).max().unwrap_or_default();
        let new_leases = NewLeases {
            issuer: job.issuer.clone(),
            job_id: job.job_id.clone(),
            repository: job.repository.clone(),
            job_keep_until: keep_until(last_expiry.max(job.expires_at), self.lifecycle.retention),
            // Spending the legacy id too, rather than only looking it up, keeps replicas of the
            // previous release (which spend only that id) and this one refusing each other's
            // replays during a rolling upgrade: two inserts of one key conflict atomically across
            // replicas, where a lookup would race an uncommitted insert. The cost is one more row
            // in the same statement, for tokens without `jti` only, pruned at `exp` like the other.
            spends: Some(SpentToken {
                token_id: job.token_id.clone(),
                legacy_id: job.legacy_token_id.clone(),
                expires_at: job.expires_at,
            }),
            leases: roles
                .iter()
                .zip(&planned)
                .map(|(role, lease)| NewLease {
                    id: lease.id.clone(),
                    role: role.name.clone(),
                    backend: role.backend.as_str().to_owned(),
                    expires_at: lease.expires_at.unix_timestamp(),
                    max_per_job: role.max_exchanges_per_job,
                    bound_to: lease.bind.map(|block| block.to_string()),
                })
                .collect(),
            ci,
            address: request.address.map(|address| address.to_string()),
        };
        match self.store.begin_leases(new_leases).await? {
            LeaseBegun::Begun => Ok(planned),
            LeaseBegun::Replayed => {
                tracing::warn!(issuer = %job.issuer, job_id = %job.job_id, "token replayed");
                Err(Error::Replayed)
            }
            LeaseBegun::JobEnded => Err(Error::JobEnded),
            LeaseBegun::CapReached { role } => {
                let max = roles
                    .iter()
                    .find(|granted| granted.name == role)
                    .map_or(0, |granted| granted.max_exchanges_per_job);
                tracing::warn!(issuer = %job.issuer, job_id = %job.job_id, %role, max, "exchange cap reached");
                Err(Error::ExchangeCapReached { role, max })
            }
        }
    }

    async fn mint(
        &self,
        job: &Job,
        token_sha256: &str,
        role: &Role,
        lease: &PlannedLease,
        address: Option<IpAddr>,
    ) -> Result<IssuedCredential, Error> {
        let lease_id = &lease.id;
        let bind = lease.bind;
        let asked_at = OffsetDateTime::now_utc();
        let started = std::time::Instant::now();
        let minted = self.mint_with_backend(job, role, lease.ttl, bind).await;
        crate::metrics::backend_call(role.backend.as_str(), "mint", started.elapsed(), minted.is_ok());
        let minted = match minted {
            Ok(minted) => minted,
            Err(error) => {
                tracing::warn!(role = %role.name, %error, "minting failed");
                self.store.set_lease_state(lease_id, LeaseState::Failed).await?;
                return Err(error.into());
            }
        };
        // The lease's expiry was planned before any role was minted; the credential's own, as the
        // backend states it or as its TTL counts from the request, may be later (the store keeps
        // the later of the two).
        let expires_at = minted.expires_at.unwrap_or(asked_at + lease.ttl);
        match self.store.activate_lease(lease_id, &minted.handle, expires_at.unix_timestamp()).await {
            Ok(LeaseState::Active) => {}
            Ok(LeaseState::Revoking) => {
                // The job ended while this credential was minted; the queue now has its handle.
                self.revocations.wake();
                return Err(Error::JobEnded);
            }
            Ok(state) => {
                // The lease was given up as never activated (the mint outlasted the bound the
                // sweeper allows it) or expired meanwhile: nothing will revoke it but this.
                tracing::warn!(%lease_id, %state, "a credential was minted for a lease already given up; revoking it");
                self.revoke_unrecorded(&minted.handle).await;
                return Err(backends::Error::Unavailable {
                    backend: role.backend.as_str(),
                    reason: "minting took longer than a lease may stay pending".into(),
                }
                .into());
            }
            Err(error) => {
                // The credential exists but its lease could not be recorded: take it back now.
                self.revoke_unrecorded(&minted.handle).await;
                return Err(error.into());
            }
        }
        // Only now that its handle is durable may the credential outlive its grace.
        if let Some(confirmation) = &minted.confirmation {
            self.confirm(lease_id, role.backend.as_str(), confirmation).await?;
        }
        self.audit.record(&Event::CredentialMinted {
            token_sha256,
            job: JobIdentity::from(job),
            role: &role.name,
            lease_id,
            backend: role.backend.as_str(),
            handle: &minted.handle,
            expires_at: expires_at.unix_timestamp(),
            address,
            bound_to: bind,
        });
        Ok(IssuedCredential {
            role: role.name.clone(),
            lease_id: lease_id.clone(),
            expires_at,
            credential: minted.credential,
            bound_to: bind,
        })
    }

    async fn mint_with_backend(
        &self,
        job: &Job,
        role: &Role,
        ttl: Duration,
        bind: Option<IpNet>,
    ) -> Result<Minted, backends::Error> {
        match role.backend {
            BackendKind::Vault => {
                let scope = role.vault.as_ref().ok_or(backends::Error::NotConfigured("vault"))?;
                self.backends.vault()?.mint(MintRequest { job, role: &role.name, scope, ttl, bind }).await
            }
            BackendKind::Aws => {
                let scope = role.aws.as_ref().ok_or(backends::Error::NotConfigured("aws"))?;
                self.backends.aws()?.mint(MintRequest { job, role: &role.name, scope, ttl, bind }).await
            }
            BackendKind::GithubApp => {
                let scope = role.github_app.as_ref().ok_or(backends::Error::NotConfigured("github"))?;
                self.backends.github_app()?.mint(MintRequest { job, role: &role.name, scope, ttl, bind }).await
            }
        }
    }

    /// Records the leases of roles never minted, because an earlier role failed, as failed: no
    /// credential exists for them.
    async fn abandon(&self, leases: &[PlannedLease]) {
        for lease in leases {
            if let Err(error) = self.store.set_lease_state(&lease.id, LeaseState::Failed).await {
                tracing::error!(lease_id = %lease.id, %error, "cannot record a lease never minted as failed; it expires in time");
            }
        }
    }

    /// Queues what an exchange already minted for revocation when a later role failed.
    async fn take_back(&self, issued: &[IssuedCredential]) {
        for credential in issued {
            if let Err(error) = self.store.request_revocation(&credential.lease_id).await {
                tracing::error!(lease_id = %credential.lease_id, %error, "cannot queue the revocation of a credential that was not handed out");
            }
        }
        self.revocations.wake();
    }

    async fn revoke_unrecorded(&self, handle: &RevokeHandle) {
        if let Err(error) = self.backends.revoke(handle).await {
            tracing::error!(%error, "revoking a credential whose lease could not be recorded failed; it lives until its TTL");
        }
    }
}

/// The requested TTL clamped to the role's `max_ttl`, and for AWS raised to STS's minimum so the
/// lease's recorded expiry is the session's.
fn granted_ttl(role: &Role, requested: Option<Duration>) -> Duration {
    let ttl = requested.map_or(role.max_ttl, |ttl| ttl.min(role.max_ttl));
    match role.backend {
        BackendKind::Vault | BackendKind::GithubApp => ttl,
        BackendKind::Aws => ttl.max(AWS_MIN_SESSION),
    }
}
