//! Persistence the lifecycle relies on, by capability: replay records, jobs, leases and the
//! revocation queue kept on them. One SQL code path (sqlx's `Any` driver, portable SQL with
//! `$N` parameters) for SQLite, the embedded default, and PostgreSQL, for several replicas. The
//! one exception is the exchange's writes, committed in batches (`group_commit.rs`): multi-row
//! statements on PostgreSQL, and on SQLite row by row through rusqlite on a thread of its own
//! (`sqlite_batch.rs`), with WAL checkpoints on another (`sqlite_checkpoint.rs`). The same tests
//! hold both to the same outcomes.
//!
//! The fleet keeps its queries beside it (`src/fleet/`): the store lends it its pool, its writer
//! and the multi-row helpers (`sql_values.rs`), so the fleet's records and its window are written
//! in one of the store's transactions without the store knowing the fleet.

#[cfg(feature = "server")]
mod ci_api_budget;
#[cfg(feature = "server")]
mod commit_queue;
mod config;
#[cfg(feature = "server")]
mod connect;
#[cfg(feature = "server")]
mod group_commit;
#[cfg(feature = "server")]
mod jobs;
#[cfg(feature = "server")]
mod jobs_to_ask;
#[cfg(feature = "server")]
mod lease_lifecycle;
#[cfg(feature = "server")]
mod lease_records;
#[cfg(feature = "server")]
mod lock;
#[cfg(feature = "server")]
mod postgres_batch;
#[cfg(feature = "server")]
mod replay;
#[cfg(feature = "server")]
mod runner_claims;
#[cfg(feature = "server")]
mod schema_state;
#[cfg(feature = "server")]
mod sql_values;
#[cfg(feature = "server")]
mod sqlite_batch;
#[cfg(feature = "server")]
mod sqlite_checkpoint;
#[cfg(feature = "server")]
mod write_connection;

#[cfg(feature = "server")]
pub use ci_api_budget::CallsTaken;
#[cfg(feature = "server")]
pub use commit_queue::GroupCommitStats;
pub use config::{StoreConfig, StoreKind};
#[cfg(feature = "server")]
pub use jobs::{EndOutcome, JobRecord, JobState};
#[cfg(feature = "server")]
pub use jobs_to_ask::JobToAsk;
#[cfg(feature = "server")]
pub use lease_records::{JobCiFacts, Lease, LeaseBegun, LeaseState, NewLease, NewLeases, SpentToken};
#[cfg(feature = "server")]
pub use lock::StoreLock;
#[cfg(feature = "server")]
pub use runner_claims::RunnerClaim;
#[cfg(feature = "server")]
pub(crate) use runner_claims::prune_claims;
#[cfg(feature = "server")]
pub use schema_state::{SchemaState, schema_state};
#[cfg(feature = "server")]
pub(crate) use sql_values::{Query, placeholders, rows_per_statement};
#[cfg(feature = "server")]
pub(crate) use write_connection::Writer;

#[cfg(feature = "server")]
use sqlx::AnyPool;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[cfg(feature = "server")]
    #[error("the store is unavailable: {0}")]
    Unavailable(#[from] sqlx::Error),
    /// SQLite, through the group commit's own connection (`sqlite_batch.rs`).
    #[cfg(feature = "server")]
    #[error("the store is unavailable: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[cfg(feature = "server")]
    #[error("the store's schema could not be migrated: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("the database was migrated by a newer ci-creds (schema version {0}); upgrade this broker")]
    NewerSchema(i64),
    #[error("the store holds a record it cannot read: {0}")]
    Corrupt(String),
    #[error("store config: {0}")]
    Config(String),
    /// The group commit's task or thread has ended, by a panic: no exchange can write any more.
    #[error("the store's group commit has stopped; restart the broker")]
    Stopped,
}

#[cfg(feature = "server")]
#[derive(Clone)]
pub struct Store {
    /// Reads, and on PostgreSQL writes too.
    pool: AnyPool,
    /// The connection each write goes through (see `write_connection.rs`).
    writers: write_connection::Writers,
    /// The exchange's writes, committed together with concurrent exchanges' (see `group_commit.rs`).
    group_commit: group_commit::GroupCommit,
    kind: StoreKind,
}

#[cfg(feature = "server")]
impl Store {
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// The pool to read on, for the layers that keep their own tables' queries beside them
    /// (`src/fleet/`); their writes go through [`writer`](Self::writer).
    pub(crate) fn reads(&self) -> &AnyPool {
        &self.pool
    }

    pub fn group_commit_stats(&self) -> GroupCommitStats {
        self.group_commit.stats()
    }

    /// Whether the store can take the exchange's writes: its database answers, and the group
    /// commit still runs.
    pub async fn ping(&self) -> Result<(), Error> {
        self.group_commit.check()?;
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

#[cfg(all(test, feature = "server"))]
#[path = "liveness_tests.rs"]
mod liveness_tests;
#[cfg(test)]
mod sqlite_checkpoint_tests;
