//! The durable revocation queue: leases in state `revoking` are claimed, revoked at their
//! backend, and confirmed; a failure is retried with capped exponential backoff, forever, until
//! the backend confirms or the credential expires by itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Notify;

use super::Broker;
use crate::audit::{Event, JobRef};
use crate::backends::{self, RevokeHandle};
use crate::clock::now_ms;
use crate::store::Lease;

/// Revocations in flight at once. Slots are refilled as calls finish, not once a whole batch
/// has, so one slow backend call never holds up the rest.
const CONCURRENCY: usize = 64;
/// More tasks are claimed once at most this many are in flight: claims come in batches.
const REFILL_BELOW: usize = CONCURRENCY / 2;
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

/// One claimed task after its backend call.
enum Attempt {
    Revoked(Lease, RevokeHandle),
    Failed(Lease, RevokeHandle, backends::Error),
    /// Not tried (no handle yet, or the AWS lock was not had): the claim lapses and it is
    /// tried again.
    Skipped,
}

/// Works the queue until the process ends.
pub async fn run(broker: Arc<Broker>) {
    let mut in_flight = FuturesUnordered::new();
    // Whether the queue may hold due tasks: at the start, after a wake-up or a poll, and while
    // claims come back full. Otherwise a finished revocation does not cost a claim query.
    let mut may_have_tasks = true;
    loop {
        if may_have_tasks && in_flight.len() <= REFILL_BELOW {
            let free = CONCURRENCY - in_flight.len();
            let claim_ms = broker.lifecycle.claim_timeout.as_millis() as i64;
            match broker.store.claim_revocations(free as i64, claim_ms).await {
                Ok(claimed) => {
                    may_have_tasks = claimed.len() == free;
                    for lease in claimed {
                        let broker = broker.clone();
                        in_flight.push(async move { broker.attempt_revocation(lease).await });
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot claim revocation tasks; retrying");
                    may_have_tasks = false;
                }
            }
        }
        if in_flight.is_empty() && !may_have_tasks {
            tokio::select! {
                _ = broker.revocations.wake.notified() => {}
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
            may_have_tasks = true;
            continue;
        }
        tokio::select! {
            Some(first) = in_flight.next() => {
                // Whatever else has finished by now is recorded with it, in one store write.
                let mut finished = vec![first];
                while let Some(Some(attempt)) = in_flight.next().now_or_never() {
                    finished.push(attempt);
                }
                broker.record_attempts(finished).await;
            }
            _ = broker.revocations.wake.notified() => may_have_tasks = true,
            _ = tokio::time::sleep(POLL_INTERVAL) => may_have_tasks = true,
        }
    }
}

impl Broker {
    async fn attempt_revocation(&self, mut lease: Lease) -> Attempt {
        let Some(handle) = lease.handle.take() else { return Attempt::Skipped };
        // An AWS deny list is read-modify-written in IAM: one broker at a time, across replicas.
        let lock = match &handle {
            RevokeHandle::Aws { .. } => match self.store.lock(AWS_DENY_LISTS_LOCK).await {
                Ok(lock) => Some(lock),
                Err(error) => {
                    tracing::warn!(lease_id = %lease.id, %error, "cannot take the AWS deny-list lock");
                    return Attempt::Skipped;
                }
            },
            RevokeHandle::Vault { .. } | RevokeHandle::GithubApp { .. } => None,
        };
        let started = std::time::Instant::now();
        let revoked = self.backends.revoke(&handle).await;
        drop(lock);
        crate::metrics::backend_call(lease.backend.clone(), "revoke", started.elapsed(), revoked.is_ok());
        match revoked {
            Ok(()) => Attempt::Revoked(lease, handle),
            Err(error) => Attempt::Failed(lease, handle, error),
        }
    }

    async fn record_attempts(&self, attempts: Vec<Attempt>) {
        let mut revoked = Vec::with_capacity(attempts.len());
        for attempt in attempts {
            match attempt {
                Attempt::Revoked(lease, handle) => revoked.push((lease, handle)),
                Attempt::Failed(lease, handle, error) => self.record_failure(&lease, &handle, &error).await,
                Attempt::Skipped => {}
            }
        }
        let ids: Vec<&str> = revoked.iter().map(|(lease, _)| lease.id.as_str()).collect();
        if let Err(error) = self.store.confirm_revocations(&ids).await {
            // Revoked at the backend; the claims lapse and the next attempts confirm them.
            tracing::warn!(leases = ids.len(), %error, "revoked, but cannot record it yet");
            return;
        }
        for (lease, handle) in &revoked {
            self.record_confirmed(lease, handle);
        }
    }

    fn record_confirmed(&self, lease: &Lease, handle: &RevokeHandle) {
        self.revocations.stats.done.fetch_add(1, Ordering::Relaxed);
        let exposure_ms = lease.revoke_requested_at.map(|at| now_ms() - at);
        if let Some(exposure_ms) = exposure_ms {
            crate::metrics::exposure_window(exposure_ms);
        }
        self.audit.record(&Event::RevocationConfirmed {
            job: JobRef { issuer: &lease.issuer, job_id: &lease.job_id },
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

    async fn record_failure(&self, lease: &Lease, handle: &RevokeHandle, error: &backends::Error) {
        let attempts = lease.attempts + 1;
        let delay = retry_delay_ms(attempts);
        let reason = error.to_string();
        if let Err(error) = self.store.retry_revocation(&lease.id, &reason, now_ms() + delay).await {
            tracing::warn!(lease_id = %lease.id, %error, "cannot record a failed revocation attempt");
        }
        self.revocations.stats.retried.fetch_add(1, Ordering::Relaxed);
        self.audit.record(&Event::RevocationFailed {
            job: JobRef { issuer: &lease.issuer, job_id: &lease.job_id },
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
