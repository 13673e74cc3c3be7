//! Group commit for the exchange's writes. Concurrent exchanges hand their writes (leases begun,
//! a lease activated) to one task, which commits whatever queued up meanwhile in one
//! transaction: on PostgreSQL, of multi-row statements (`postgres_batch.rs`); on SQLite, statement
//! by statement on a thread of its own (`sqlite_batch.rs`). An exchange still waits for its own
//! write to commit: a lease is durable before anything is minted.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::commit_queue::{Counters, GroupCommitStats, Running, Write};
use super::postgres_batch::{self, Activation};
use super::sqlite_batch::{SqliteBatches, SqliteFile};
use super::write_connection::{Writer, Writers};
use super::{Error, LeaseBegun, LeaseState, NewLeases};

/// The most writes one transaction takes; also bounds a PostgreSQL statement's parameters (6 per
/// lease, 16 leases per exchange at most: well below PostgreSQL's 65,535).
const MAX_BATCH: usize = 128;
/// Writes waiting beyond this make exchanges wait to queue theirs.
const QUEUE: usize = 1024;

#[derive(Clone)]
pub(super) struct GroupCommit {
    queue: mpsc::Sender<Write>,
    counters: Arc<Counters>,
    running: Running,
}

impl GroupCommit {
    /// Starts the committing task; it ends once every handle to the store is dropped. On SQLite,
    /// a thread committing to `sqlite` runs the batches.
    pub(super) fn start(writers: Writers, sqlite: Option<SqliteFile>) -> Result<Self, Error> {
        let (queue, writes) = mpsc::channel(QUEUE);
        let counters = Arc::new(Counters::default());
        let running = Running::default();
        let sqlite = match sqlite {
            Some(file) => Some(SqliteBatches::start(file, counters.clone(), running.guard())?),
            None => None,
        };
        let counters_of_task = counters.clone();
        let guard = running.guard();
        tokio::spawn(async move {
            let _running = guard;
            commit_as_they_come(writers, sqlite, writes, counters_of_task).await;
        });
        Ok(Self { queue, counters, running })
    }

    /// Fails once the commits have stopped (see [`Running`]).
    pub(super) fn check(&self) -> Result<(), Error> {
        if self.running.stopped() { Err(Error::Stopped) } else { Ok(()) }
    }

    #[cfg(test)]
    pub(super) fn running(&self) -> &Running {
        &self.running
    }

    /// How many guards the commits hold: one per task or thread (with this handle not cloned).
    #[cfg(test)]
    pub(super) fn running_guards(&self) -> usize {
        self.running.guards()
    }

    pub(super) fn stats(&self) -> GroupCommitStats {
        self.counters.stats()
    }

    pub(super) async fn begin_leases(&self, leases: NewLeases) -> Result<LeaseBegun, Error> {
        let (reply, answer) = oneshot::channel();
        self.queue.send(Write::Begin { leases, reply }).await.map_err(|_| Error::Stopped)?;
        answer.await.map_err(|_| Error::Stopped)?
    }

    pub(super) async fn activate_lease(&self, id: &str, handle: String, expires_at: i64) -> Result<LeaseState, Error> {
        let (reply, answer) = oneshot::channel();
        let write = Write::Activate { id: id.to_owned(), handle, expires_at, reply };
        self.queue.send(write).await.map_err(|_| Error::Stopped)?;
        answer.await.map_err(|_| Error::Stopped)?
    }
}

async fn commit_as_they_come(
    writers: Writers,
    sqlite: Option<SqliteBatches>,
    mut writes: mpsc::Receiver<Write>,
    counters: Arc<Counters>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while writes.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let writer = writers.acquire().await;
        // Writes queued while the previous batch held the writer join this one: fewer, larger
        // commits, and on SQLite a commit costs about as much as a dozen writes.
        while batch.len() < MAX_BATCH
            && let Ok(write) = writes.try_recv()
        {
            batch.push(write);
        }
        match (writer, &sqlite) {
            // The thread holds the writer until the batch is committed: the next batch waits here.
            (Ok(writer), Some(sqlite)) => sqlite.submit(std::mem::take(&mut batch), writer),
            (Ok(mut writer), None) => commit(&mut writer, &mut batch, &counters).await,
            (Err(error), _) => {
                for write in batch.drain(..) {
                    write.fail(same_failure(&error));
                }
            }
        }
    }
}

/// Commits `batch` together; if that fails, each write alone, so one write's failure is its own.
async fn commit(writer: &mut Writer, batch: &mut Vec<Write>, counters: &Counters) {
    let writes = batch.len();
    if writes > 1 {
        match commit_together(writer, batch).await {
            Ok(()) => {
                counters.batch_committed(writes);
                return;
            }
            Err(error) => {
                counters.batch_failed();
                tracing::warn!(%error, writes, "a group commit failed; committing its writes one by one");
            }
        }
    }
    // A reply nobody waits for any more (the request was dropped) is of no consequence: the
    // write stands, as it would had the request gone on.
    for write in batch.drain(..) {
        let mut alone = vec![write];
        if let Err(error) = commit_together(writer, &mut alone).await {
            alone.pop().expect("the write is answered only once committed").fail(error);
        }
    }
}

/// Commits `batch` in one transaction and answers each write, leaving `batch` empty; on failure,
/// answers none and leaves `batch` as it was.
async fn commit_together(writer: &mut Writer, batch: &mut Vec<Write>) -> Result<(), Error> {
    let mut begins = Vec::new();
    let mut activations = Vec::new();
    for write in batch.iter() {
        match write {
            Write::Begin { leases, .. } => begins.push(leases),
            Write::Activate { id, handle, expires_at, .. } => {
                activations.push(Activation { id, handle, expires_at: *expires_at })
            }
        }
    }
    let outcomes = postgres_batch::begin_and_activate(writer, &begins, &activations).await?;
    let mut begun = outcomes.begun.into_iter();
    let mut activated = outcomes.activated.into_iter();
    for write in batch.drain(..) {
        match write {
            Write::Begin { reply, .. } => _ = reply.send(begun.next().ok_or_else(lost)),
            Write::Activate { reply, .. } => _ = reply.send(activated.next().unwrap_or_else(|| Err(lost()))),
        }
    }
    Ok(())
}

fn lost() -> Error {
    Error::Corrupt("a batched write lost its outcome".into())
}

/// The failure to take the writer, once per write of the batch (sqlx's errors cannot be cloned).
fn same_failure(error: &Error) -> Error {
    match error {
        Error::Unavailable(sqlx::Error::PoolTimedOut) => Error::Unavailable(sqlx::Error::PoolTimedOut),
        other => Error::Unavailable(sqlx::Error::Io(std::io::Error::other(other.to_string()))),
    }
}
