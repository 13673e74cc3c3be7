//! The group commit's batches on SQLite, on a thread of their own with a connection of their own
//! (rusqlite) rather than sqlx's. sqlx runs every statement of an SQLite connection on that
//! connection's worker thread, so each statement is a round trip between threads: a batch took a
//! dozen thread wake-ups, which cost more than SQLite's own work (on a VM, tens of microseconds
//! each). Here a whole batch runs on one thread with statements prepared once and cached: one
//! hand-off there, and the answers back. The statements are the ones sqlx runs on PostgreSQL
//! (`lease_writes.rs`).
//!
//! Each write runs in a savepoint of the batch's transaction: a write refused (a replay, an ended
//! job) or failing leaves nothing behind and does not disturb its neighbours, so each fares
//! exactly as it would alone. Outcomes are sent once the batch has committed.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SendError, Sender};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::group_commit::{Counters, QueuedLease, Write, stopped};
use super::lease_writes::{ACTIVATE_LEASE, INSERT_LEASE, SEE_JOB, vanished};
use super::replay::SPEND_TOKEN;
use super::writer::Writer;
use super::{Error, LeaseBegun, LeaseState, now};

/// The seven statements a batch runs, and one to spare.
const CACHED_STATEMENTS: usize = 8;

/// Opens the database file the store migrated, with the settings of every store connection.
pub(super) fn open(path: &Path, settings: &str) -> Result<Connection, Error> {
    let connection = Connection::open(path)?;
    connection.execute_batch(settings)?;
    connection.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(connection)
}

/// The committing thread's queue; the thread ends once this is dropped.
pub(super) struct SqliteBatches {
    batches: Sender<Submitted>,
}

/// What a write came to, before it is sent to whoever queued it.
enum Outcome {
    Begun(Result<LeaseBegun, Error>),
    Activated(Result<LeaseState, Error>),
}

/// A batch, and the store's writer, held until the batch is committed so that no other write of
/// this broker contends for SQLite's lock meanwhile.
type Submitted = (Vec<Write>, Writer);

impl SqliteBatches {
    /// Starts the thread committing on `connection`.
    pub(super) fn start(connection: Connection, counters: Arc<Counters>) -> Result<Self, Error> {
        let (batches, submitted) = mpsc::channel();
        std::thread::Builder::new()
            .name("ci-creds-sqlite-commit".into())
            .spawn(move || commit_as_they_come(connection, &submitted, &counters))
            .map_err(|error| Error::Unavailable(sqlx::Error::Io(error)))?;
        Ok(Self { batches })
    }

    /// Hands `batch` and the store's `writer` to the thread, which answers each write once it is
    /// committed, then lets the writer go.
    pub(super) fn submit(&self, batch: Vec<Write>, writer: Writer) {
        if let Err(SendError((batch, _writer))) = self.batches.send((batch, writer)) {
            for write in batch {
                write.fail(stopped());
            }
        }
    }
}

fn commit_as_they_come(mut connection: Connection, submitted: &Receiver<Submitted>, counters: &Counters) {
    while let Ok((batch, _writer)) = submitted.recv() {
        commit(&mut connection, batch, counters);
    }
}

/// Commits `batch` together; if the transaction itself fails, each write in a transaction of its
/// own, so one write's failure is its own.
fn commit(connection: &mut Connection, batch: Vec<Write>, counters: &Counters) {
    if batch.len() > 1 {
        match run_in_transaction(connection, &batch) {
            Ok(outcomes) => {
                counters.batch_committed(batch.len());
                for (write, outcome) in batch.into_iter().zip(outcomes) {
                    write.answer(outcome);
                }
                return;
            }
            Err(error) => {
                counters.batch_failed();
                tracing::warn!(%error, writes = batch.len(), "a group commit failed; committing its writes one by one");
            }
        }
    }
    for write in batch {
        match run_in_transaction(connection, std::slice::from_ref(&write)) {
            Ok(mut outcomes) => write.answer(outcomes.pop().expect("one outcome per write")),
            Err(error) => write.fail(error.into()),
        }
    }
}

/// Runs `writes` in one transaction, each in a savepoint of it; fails only if the transaction
/// cannot begin or commit, or a savepoint cannot be undone.
fn run_in_transaction(connection: &mut Connection, writes: &[Write]) -> rusqlite::Result<Vec<Outcome>> {
    let now = now();
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut outcomes = Vec::with_capacity(writes.len());
    for write in writes {
        tx.prepare_cached("SAVEPOINT write")?.execute([])?;
        let outcome = match write {
            Write::Begin { lease, .. } => Outcome::Begun(begin_lease(&tx, lease, now)),
            Write::Activate { id, handle, .. } => Outcome::Activated(activate_lease(&tx, id, handle, now)),
        };
        if !matches!(outcome, Outcome::Begun(Ok(LeaseBegun::Begun)) | Outcome::Activated(Ok(_))) {
            tx.prepare_cached("ROLLBACK TO write")?.execute([])?;
        }
        tx.prepare_cached("RELEASE write")?.execute([])?;
        outcomes.push(outcome);
    }
    tx.commit()?;
    Ok(outcomes)
}

/// See [`super::Store::begin_lease`]. Refused or failed, the caller undoes what it wrote.
fn begin_lease(tx: &Connection, lease: &QueuedLease, now: i64) -> Result<LeaseBegun, Error> {
    if let Some((token_id, expires_at)) = &lease.spends {
        let spent = tx.prepare_cached(SPEND_TOKEN)?.execute(params![lease.issuer, token_id, expires_at])?;
        if spent == 0 {
            return Ok(LeaseBegun::Replayed);
        }
    }
    let state: String = tx
        .prepare_cached(SEE_JOB)?
        .query_row(params![lease.issuer, lease.job_id, lease.repository, now, lease.job_keep_until], |row| {
            row.get(0)
        })?;
    if state == "ended" {
        return Ok(LeaseBegun::JobEnded);
    }
    tx.prepare_cached(INSERT_LEASE)?.execute(params![
        lease.id,
        lease.issuer,
        lease.job_id,
        lease.role,
        lease.backend,
        now,
        lease.expires_at,
        now
    ])?;
    Ok(LeaseBegun::Begun)
}

/// See [`super::Store::activate_lease`].
fn activate_lease(tx: &Connection, id: &str, handle: &str, now: i64) -> Result<LeaseState, Error> {
    let state: Option<String> =
        tx.prepare_cached(ACTIVATE_LEASE)?.query_row(params![handle, now, id], |row| row.get(0)).optional()?;
    let state = state.ok_or_else(|| vanished(id))?;
    state.parse().map_err(Error::Corrupt)
}

impl Write {
    fn answer(self, outcome: Outcome) {
        match (self, outcome) {
            (Self::Begin { reply, .. }, Outcome::Begun(outcome)) => _ = reply.send(outcome),
            (Self::Activate { reply, .. }, Outcome::Activated(outcome)) => _ = reply.send(outcome),
            (write, _) => write.fail(Error::Corrupt("a batched write lost its outcome".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rusqlite binds parameters by position; SQLite numbers `$N` by first appearance. The two
    /// agree only while each statement's placeholders first appear in order.
    #[test]
    fn each_shared_statement_numbers_its_placeholders_in_order() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE exchanged_tokens (issuer, token_id, expires_at, PRIMARY KEY (issuer, token_id));
                 CREATE TABLE jobs (issuer, job_id, repository, state, first_seen_at, keep_until, PRIMARY KEY (issuer, job_id));
                 CREATE TABLE leases (id PRIMARY KEY, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at);",
            )
            .unwrap();
        for sql in [SPEND_TOKEN, SEE_JOB, INSERT_LEASE, ACTIVATE_LEASE] {
            let statement = connection.prepare(sql).unwrap();
            for n in 1..=statement.parameter_count() {
                assert_eq!(statement.parameter_index(&format!("${n}")).unwrap(), Some(n), "{sql}");
            }
        }
    }
}
