//! The durable revocation queue: leases in state `revoking` are claimed, revoked at their
//! backend, and confirmed; a failure is retried with capped exponential backoff, forever, until
//! the backend confirms or the credential expires by itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::Broker;
use crate::audit::{Event, JobRef};
use crate::backends::RevokeHandle;
use crate::store::{Lease, now_ms};

/// Tasks taken per claim; they are revoked concurrently.
const BATCH: i64 = 64;
/// Due retries are picked up at least this often even when nothing wakes the worker.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
const FIRST_RETRY_MS: i64 = 1_000;
const MAX_RETRY_MS: i64 = 60_000;

/// Serialises every change to AWS deny lists among the brokers sharing a store.
pub const AWS_DENY_LISTS_LOCK: &str = "ci-creds:aws-deny-lists";

/// Wakes the worker when work arrives, and counts what it did (for metrics).
#[derive(Default)]
pub struct RevocationQueue {
    wake: Notify,
    pub stats: RevocationStats,
}

#[derive(Default)]
pub struct RevocationStats {
    /// Revocations the backend confirmed.
    pub done: AtomicU64,
    /// Attempts that failed and were scheduled again.
    pub retried: AtomicU64,
}

impl RevocationQueue {
    pub fn wake(&self) {
        // A stored permit means a wake-up between two claims is never lost.
        self.wake.notify_one();
    }
}

/// The delay before attempt `attempts + 1`: 1 s, 2 s, 4 s … capped at 60 s.
pub fn retry_delay_ms(attempts: i64) -> i64 {
    let exponent = attempts.clamp(1, 16) - 1;
    (FIRST_RETRY_MS << exponent).min(MAX_RETRY_MS)
}

/// Works the queue until the process ends.
pub async fn run(broker: Arc<Broker>) {
    loop {
        let claim_ms = broker.lifecycle.claim_timeout.as_millis() as i64;
        let claimed = match broker.store.claim_revocations(BATCH, claim_ms).await {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, "cannot claim revocation tasks; retrying");
                tokio::time::sleep(POLL_INTERVAL).await;
                continue;
            }
        };
        if claimed.is_empty() {
            tokio::select! {
                _ = broker.revocations.wake.notified() => {}
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
            continue;
        }
        futures_util::future::join_all(claimed.iter().map(|lease| broker.revoke_lease(lease))).await;
    }
}

impl Broker {
    async fn revoke_lease(&self, lease: &Lease) {
        let Some(handle) = &lease.handle else { return };
        let stats = &self.revocations.stats;
        let job = || JobRef { issuer: &lease.issuer, job_id: &lease.job_id };
        // An AWS deny list is read-modify-written in IAM: one broker at a time, across replicas.
        let lock = match handle {
            RevokeHandle::Aws { .. } => match self.store.lock(AWS_DENY_LISTS_LOCK).await {
                Ok(lock) => Some(lock),
                Err(error) => {
                    // The claim lapses and the task is tried again.
                    tracing::warn!(lease_id = %lease.id, %error, "cannot take the AWS deny-list lock");
                    return;
                }
            },
            RevokeHandle::Vault { .. } => None,
        };
        let started = std::time::Instant::now();
        let revoked = self.backends.revoke(handle).await;
        drop(lock);
        crate::metrics::backend_call(&lease.backend, "revoke", started.elapsed(), revoked.is_ok());
        match revoked {
            Ok(()) => {
                if let Err(error) = self.store.confirm_revocation(&lease.id).await {
                    // Revoked at the backend; the claim lapses and the next attempt confirms it.
                    tracing::warn!(lease_id = %lease.id, %error, "revoked, but cannot record it yet");
                    return;
                }
                stats.done.fetch_add(1, Ordering::Relaxed);
                let exposure_ms = lease.revoke_requested_at.map(|at| now_ms() - at);
                if let Some(exposure_ms) = exposure_ms {
                    crate::metrics::exposure_window(exposure_ms);
                }
                self.audit.record(&Event::RevocationConfirmed {
                    job: job(),
                    role: &lease.role,
                    lease_id: &lease.id,
                    backend: &lease.backend,
                    handle,
                    attempts: lease.attempts + 1,
                    exposure_ms,
                });
                tracing::info!(
                    lease_id = %lease.id, issuer = %lease.issuer, job_id = %lease.job_id, role = %lease.role,
                    attempts = lease.attempts + 1, exposure_ms, "revocation confirmed"
                );
            }
            Err(error) => {
                let attempts = lease.attempts + 1;
                let delay = retry_delay_ms(attempts);
                let reason = error.to_string();
                if let Err(error) = self.store.retry_revocation(&lease.id, &reason, now_ms() + delay).await {
                    tracing::warn!(lease_id = %lease.id, %error, "cannot record a failed revocation attempt");
                }
                stats.retried.fetch_add(1, Ordering::Relaxed);
                self.audit.record(&Event::RevocationFailed {
                    job: job(),
                    role: &lease.role,
                    lease_id: &lease.id,
                    backend: &lease.backend,
                    handle,
                    attempts,
                    retry_in_ms: delay,
                    error: &reason,
                });
                tracing::warn!(
                    lease_id = %lease.id, issuer = %lease.issuer, job_id = %lease.job_id, role = %lease.role,
                    attempts, retry_in_ms = delay, error = %reason, "revocation failed; will retry"
                );
            }
        }
    }
}
