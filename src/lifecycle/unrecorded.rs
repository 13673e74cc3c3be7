//! Leases a broker left without a handle when it died mid-mint: begun (pending), perhaps even
//! queued for revocation by their job's end, but never given the handle of the credential that
//! may or may not exist. Settled at start and by every sweep, so that nothing stays pending
//! forever and no job's end waits on them:
//! - AWS: the handle of a job's session on a role is known without STS's answer (the role's ARN
//!   and the job's source identity), so the lease gets it, with the latest expiry the session can
//!   have; at the job's end the identity is denied on the role whether the session exists or not.
//! - Vault, GitHub: nothing names the credential, so the lease is given up as `failed`. A Vault
//!   token minted for it was created within its mint grace and dies by itself within seconds
//!   (`backends/vault/mint_grace.rs`); a GitHub installation token lives out GitHub's hour.

use super::Exchange;
use crate::backends::RevokeHandle;
use crate::backends::aws::source_identity;
use crate::store::{self, Lease};

/// A lease still without a handle this long after it was begun is settled: a mint (every
/// backend call under its timeout, the store's writes) takes far less, so its broker died. Should
/// a mint ever take longer, its late credential is revoked, never handed out (`exchange.rs`).
pub const PENDING_GIVE_UP_SECONDS: i64 = 120;

/// AWS leases settled per store query.
const BATCH: i64 = 500;

impl Exchange {
    /// Settles the leases begun before `begun_before` (unix seconds) that have no handle.
    pub async fn settle_unrecorded(&self, begun_before: i64) -> Result<(), store::Error> {
        let mut denied_by_job = 0;
        loop {
            let leases = self.store.unrecorded_leases("aws", begun_before, BATCH).await?;
            let mut settled = 0;
            for lease in &leases {
                let Some(handle) = self.aws_handle(lease) else { continue };
                // The session was asked for within the bound after its lease was begun.
                let expires_at = lease.expires_at + PENDING_GIVE_UP_SECONDS;
                self.store.activate_lease(&lease.id, &handle, expires_at).await?;
                settled += 1;
            }
            denied_by_job += settled;
            // Leases whose role left the policy keep no handle: the next query would find them
            // again, so they are given up below.
            if (leases.len() as i64) < BATCH || settled == 0 {
                break;
            }
        }
        if denied_by_job > 0 {
            self.revocations.wake();
            tracing::warn!(
                leases = denied_by_job,
                "AWS leases left without a handle by a broker that stopped mid-mint: their sessions are denied with their jobs"
            );
        }
        let given_up = self.store.give_up_pending_leases(begun_before).await?;
        if given_up > 0 {
            tracing::warn!(
                given_up,
                "leases left pending by a broker that stopped mid-mint given up: a Vault token minted for one dies within its mint grace"
            );
        }
        Ok(())
    }

    /// The handle an AWS session minted for `lease` has, known from the policy and the job alone.
    fn aws_handle(&self, lease: &Lease) -> Option<RevokeHandle> {
        let Some(scope) = self.policy.role(&lease.role).and_then(|role| role.aws.as_ref()) else {
            tracing::warn!(lease_id = %lease.id, role = %lease.role, "an AWS lease's role is no longer in policy; giving it up");
            return None;
        };
        Some(RevokeHandle::Aws {
            role_arn: scope.role_arn.clone(),
            source_identity: source_identity(&lease.issuer, &lease.job_id),
            expires_at: lease.expires_at + PENDING_GIVE_UP_SECONDS,
        })
    }
}
