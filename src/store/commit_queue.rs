//! What the group commit's task and its SQLite thread share: the writes queued for them, the
//! counts of what they committed, and whether they still run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::oneshot;

use super::{Error, LeaseBegun, LeaseState, NewLeases};

/// One exchange's write, and where its outcome goes once committed.
pub(super) enum Write {
    Begin { leases: NewLeases, reply: oneshot::Sender<Result<LeaseBegun, Error>> },
    Activate { id: String, handle: String, expires_at: i64, reply: oneshot::Sender<Result<LeaseState, Error>> },
}

/// How the exchange's writes were committed since the store was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Transactions that committed more than one write.
    pub batches: u64,
    /// Writes those transactions committed.
    pub batched_writes: u64,
    /// Batches that failed as a whole, whose writes were then committed one by one.
    pub batches_failed: u64,
}

/// Counted by whichever commits a batch, read by [`GroupCommitStats`].
#[derive(Default)]
pub(super) struct Counters {
    batches: AtomicU64,
    batched_writes: AtomicU64,
    batches_failed: AtomicU64,
}

/// Whether the committing task, and on SQLite its thread, still run. While the store is in use
/// they end only by a panic, and then every later write fails: readiness must say so.
#[derive(Clone, Default)]
pub(super) struct Running(Arc<AtomicBool>);

/// Held by the committing task or thread; dropped, on a panic too, it marks the commits stopped.
pub(super) struct RunningGuard(Arc<AtomicBool>);

impl Write {
    pub(super) fn fail(self, error: Error) {
        match self {
            Self::Begin { reply, .. } => _ = reply.send(Err(error)),
            Self::Activate { reply, .. } => _ = reply.send(Err(error)),
        }
    }
}

impl Counters {
    pub(super) fn batch_committed(&self, writes: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batched_writes.fetch_add(writes as u64, Ordering::Relaxed);
    }

    pub(super) fn batch_failed(&self) {
        self.batches_failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn stats(&self) -> GroupCommitStats {
        GroupCommitStats {
            batches: self.batches.load(Ordering::Relaxed),
            batched_writes: self.batched_writes.load(Ordering::Relaxed),
            batches_failed: self.batches_failed.load(Ordering::Relaxed),
        }
    }
}

impl Running {
    pub(super) fn guard(&self) -> RunningGuard {
        RunningGuard(self.0.clone())
    }

    pub(super) fn stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// How many guards are held (with this handle not cloned).
    #[cfg(test)]
    pub(super) fn guards(&self) -> usize {
        Arc::strong_count(&self.0) - 1
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
