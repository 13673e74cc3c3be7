//! The group commit's batches on SQLite, on a thread of their own with a connection of their own
//! (rusqlite) rather than sqlx's. sqlx runs every statement of an SQLite connection on that
//! connection's worker thread, so each statement is a round trip between threads: a batch took a
//! dozen thread wake-ups, which cost more than SQLite's own work (on a VM, tens of microseconds
//! each). Here a whole batch runs on one thread with statements prepared once and cached: one
//! hand-off there, and the answers back.
//!
//! Writes run one after another in the batch's transaction, each as it would alone: a write
//! refused (a replay, an ended job, a role past its cap) leaves no lease and no spent token
//! behind (past its cap, only the job's record as seen), so its neighbours see what they would
//! have seen had it been written alone. A write that fails (an error) undoes the whole batch,
//! which is then committed write by write, so that the failure is that write's only. Outcomes are
//! sent once the batch has committed.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SendError, Sender};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::commit_queue::{Counters, RunningGuard, Write};
use super::postgres_batch::state_after_activation;
use super::replay::SPEND_TOKEN;
use super::sqlite_checkpoint::Checkpoints;
use super::write_connection::Writer;
use super::{Error, LeaseBegun, LeaseState, NewLeases};
use crate::clock::now;

/// Undoes [`SPEND_TOKEN`] for a write refused after it.
const UNSPEND_TOKEN: &str = "DELETE FROM exchanged_tokens WHERE issuer = $1 AND token_id = $2";

/// Records a job as seen (its repository, how long to keep it) unless it has ended. DO UPDATE
/// has no other condition, so the statement changes a row exactly when the job is active: one
/// statement, not an upsert and a read, and an ended job's record is left as it is. (Counting
/// the change rather than RETURNING a row spares SQLite a temporary table per execution.)
const SEE_JOB: &str = "INSERT INTO jobs (issuer, job_id, repository, state, first_seen_at, keep_until, ci_api_locator, last_asked_at, runner, address)
 VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $8, $9)
 ON CONFLICT (issuer, job_id) DO UPDATE SET
     repository = COALESCE(jobs.repository, excluded.repository),
     keep_until = CASE WHEN jobs.keep_until > excluded.keep_until THEN jobs.keep_until ELSE excluded.keep_until END,
     ci_api_locator = COALESCE(jobs.ci_api_locator, excluded.ci_api_locator),
     last_asked_at = CASE WHEN jobs.last_asked_at > excluded.last_asked_at THEN jobs.last_asked_at ELSE excluded.last_asked_at END,
     runner = COALESCE(excluded.runner, jobs.runner),
     address = COALESCE(excluded.address, jobs.address)
 WHERE jobs.state = 'active'";

/// Leases a job has of a role, whatever their state (`leases_job` finds the job's).
const COUNT_ROLE_LEASES: &str = "SELECT COUNT(*) FROM leases WHERE issuer = $1 AND job_id = $2 AND role = $3";

const INSERT_LEASE: &str =
    "INSERT INTO leases (id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at, bound_to)
 VALUES ($1, $2, $3, $4, $5, NULL, 'pending', $6, $7, $6, $8)";

/// A pending lease becomes active, with its handle; the credential's expiry replaces the lease's
/// if later. Whether it changed a row says whether the lease was pending: no RETURNING, which
/// costs SQLite a temporary table per execution.
const ACTIVATE_PENDING_LEASE: &str = "UPDATE leases SET handle = $1, updated_at = $2,
     expires_at = CASE WHEN expires_at < $3 THEN $3 ELSE expires_at END, state = 'active'
 WHERE id = $4 AND state = 'pending'";

/// A lease no longer pending (its job ended while the credential was minted) keeps its state and
/// gets the handle its revocation needs.
const RECORD_HANDLE: &str = "UPDATE leases SET handle = $1, updated_at = $2,
     expires_at = CASE WHEN expires_at < $3 THEN $3 ELSE expires_at END
 WHERE id = $4";

const LEASE_STATE: &str = "SELECT state FROM leases WHERE id = $1";

/// The statements a batch runs, and one to spare.
const CACHED_STATEMENTS: usize = 10;

/// The database file the store migrated, opened for the committing thread, and its checkpoints.
pub(super) struct SqliteFile {
    connection: Connection,
    checkpoints: Checkpoints,
}

/// Opens `path` with the settings of every store connection, and starts its checkpoints.
pub(super) fn open(path: &Path, settings: &str) -> Result<SqliteFile, Error> {
    let connection = Connection::open(path)?;
    connection.execute_batch(settings)?;
    connection.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(SqliteFile { connection, checkpoints: Checkpoints::start(path, settings)? })
}

/// The committing thread's queue; the thread ends once this is dropped.
pub(super) struct SqliteBatches {
    batches: Sender<Submitted>,
}

/// What a write came to, before it is sent to whoever queued it.
enum Outcome {
    Begun(LeaseBegun),
    /// A lease that vanished, or whose state cannot be read, fails its write alone: nothing was
    /// written for it that the batch must undo.
    Activated(Result<LeaseState, Error>),
}

/// A batch, and the store's writer, held until the batch is committed so that no other write of
/// this broker contends for SQLite's lock meanwhile.
type Submitted = (Vec<Write>, Writer);

impl SqliteBatches {
    /// Starts the thread committing to `file`; its checkpoints end with it, and `running` marks
    /// its end.
    pub(super) fn start(file: SqliteFile, counters: Arc<Counters>, running: RunningGuard) -> Result<Self, Error> {
        let (batches, submitted) = mpsc::channel();
        let SqliteFile { connection, checkpoints } = file;
        std::thread::Builder::new()
            .name("ci-creds-sqlite-commit".into())
            .spawn(move || {
                let _running = running;
                commit_as_they_come(connection, &submitted, &counters);
                drop(checkpoints);
            })
            .map_err(|error| Error::Unavailable(sqlx::Error::Io(error)))?;
        Ok(Self { batches })
    }

    /// Hands `batch` and the store's `writer` to the thread, which answers each write once it is
    /// committed, then lets the writer go.
    pub(super) fn submit(&self, batch: Vec<Write>, writer: Writer) {
        if let Err(SendError((batch, _writer))) = self.batches.send((batch, writer)) {
            for write in batch {
                write.fail(Error::Stopped);
            }
        }
    }
}

fn commit_as_they_come(mut connection: Connection, submitted: &Receiver<Submitted>, counters: &Counters) {
    while let Ok((batch, writer)) = submitted.recv() {
        commit(&mut connection, batch, writer, counters);
    }
}

/// Commits `batch` together; if that fails, each write in a transaction of its own, so one
/// write's failure is its own. The writer is let go as soon as the batch has committed, before
/// its answers: the task waiting for it is then woken ahead of the exchanges, and the next batch
/// starts sooner.
fn commit(connection: &mut Connection, batch: Vec<Write>, writer: Writer, counters: &Counters) {
    if batch.len() > 1 {
        match run_in_transaction(connection, &batch) {
            Ok(outcomes) => {
                drop(writer);
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
            Err(error) => write.fail(error),
        }
    }
}

/// Runs `writes` in one transaction, all of them or none.
fn run_in_transaction(connection: &mut Connection, writes: &[Write]) -> Result<Vec<Outcome>, Error> {
    let now = now();
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut outcomes = Vec::with_capacity(writes.len());
    for write in writes {
        outcomes.push(match write {
            Write::Begin { leases, .. } => Outcome::Begun(begin_leases(&tx, leases, now)?),
            Write::Activate { id, handle, expires_at, .. } => {
                Outcome::Activated(activate_lease(&tx, id, handle, *expires_at, now)?)
            }
        });
    }
    tx.commit()?;
    Ok(outcomes)
}

/// See [`super::Store::begin_leases`]: refused, it leaves nothing behind.
fn begin_leases(tx: &Connection, new: &NewLeases, now: i64) -> Result<LeaseBegun, Error> {
    if let Some(token) = &new.spends {
        let mut replayed = false;
        for id in token.ids() {
            replayed |= tx.prepare_cached(SPEND_TOKEN)?.execute(params![new.issuer, id, token.expires_at])? == 0;
        }
        if replayed {
            // Its other id, if newly spent, stays so: it names the same signed token.
            return Ok(LeaseBegun::Replayed);
        }
    }
    let seen = tx.prepare_cached(SEE_JOB)?.execute(params![
        new.issuer,
        new.job_id,
        new.repository,
        now,
        new.job_keep_until,
        new.ci.locator,
        new.ci.asked_at_ms,
        new.ci.runner,
        new.address
    ])?;
    let refused = if seen == 0 { Some(LeaseBegun::JobEnded) } else { cap_reached(tx, new)? };
    if let Some(refused) = refused {
        if let Some(token) = &new.spends {
            for id in token.ids() {
                tx.prepare_cached(UNSPEND_TOKEN)?.execute(params![new.issuer, id])?;
            }
        }
        return Ok(refused);
    }
    let mut insert = tx.prepare_cached(INSERT_LEASE)?;
    for lease in &new.leases {
        insert.execute(params![
            lease.id,
            new.issuer,
            new.job_id,
            lease.role,
            lease.backend,
            now,
            lease.expires_at,
            lease.bound_to
        ])?;
    }
    Ok(LeaseBegun::Begun)
}

/// The first role of `new` whose cap the job has reached. The transaction is IMMEDIATE: it holds
/// SQLite's write lock from its start, so no other exchange of the job, of this broker or another
/// on the same file, can add a lease between this count and this write's commit.
fn cap_reached(tx: &Connection, new: &NewLeases) -> Result<Option<LeaseBegun>, Error> {
    for lease in new.leases.iter().filter(|lease| lease.max_per_job > 0) {
        let had: i64 = tx
            .prepare_cached(COUNT_ROLE_LEASES)?
            .query_row(params![new.issuer, new.job_id, lease.role], |row| row.get(0))?;
        if had >= i64::from(lease.max_per_job) {
            return Ok(Some(LeaseBegun::CapReached { role: lease.role.clone() }));
        }
    }
    Ok(None)
}

/// See [`super::Store::activate_lease`].
fn activate_lease(
    tx: &Connection,
    id: &str,
    handle: &str,
    expires_at: i64,
    now: i64,
) -> rusqlite::Result<Result<LeaseState, Error>> {
    if tx.prepare_cached(ACTIVATE_PENDING_LEASE)?.execute(params![handle, now, expires_at, id])? == 1 {
        return Ok(Ok(LeaseState::Active));
    }
    tx.prepare_cached(RECORD_HANDLE)?.execute(params![handle, now, expires_at, id])?;
    let state: Option<String> = tx.prepare_cached(LEASE_STATE)?.query_row(params![id], |row| row.get(0)).optional()?;
    Ok(state_after_activation(id, state.as_deref()))
}

impl Write {
    fn answer(self, outcome: Outcome) {
        match (self, outcome) {
            (Self::Begin { reply, .. }, Outcome::Begun(outcome)) => _ = reply.send(Ok(outcome)),
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
    fn each_statement_numbers_its_placeholders_in_order() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE exchanged_tokens (issuer, token_id, expires_at, PRIMARY KEY (issuer, token_id));
                 CREATE TABLE jobs (issuer, job_id, repository, state, first_seen_at, keep_until, ci_api_locator, last_asked_at, runner, address, PRIMARY KEY (issuer, job_id));
                 CREATE TABLE leases (id PRIMARY KEY, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at, bound_to);",
            )
            .unwrap();
        for sql in [
            SPEND_TOKEN,
            UNSPEND_TOKEN,
            SEE_JOB,
            COUNT_ROLE_LEASES,
            INSERT_LEASE,
            ACTIVATE_PENDING_LEASE,
            RECORD_HANDLE,
            LEASE_STATE,
        ] {
            let statement = connection.prepare(sql).unwrap();
            for n in 1..=statement.parameter_count() {
                assert_eq!(statement.parameter_index(&format!("${n}")).unwrap(), Some(n), "{sql}");
            }
        }
    }
}
