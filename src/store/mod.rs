//! Persistence the lifecycle relies on, by capability: replay records, jobs, leases and the
//! revocation queue kept on them. SQLite is the embedded default.

mod jobs;
mod lease;
mod leases;
mod replay;

pub use jobs::{EndOutcome, JobRecord, JobState};
pub use lease::{Lease, LeaseBegun, LeaseState, NewLease};

use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use thiserror::Error;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

#[derive(Debug, Error)]
pub enum Error {
    #[error("the store is unavailable: {0}")]
    Unavailable(#[from] sqlx::Error),
    #[error("the store's schema could not be migrated: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("the store holds a record it cannot read: {0}")]
    Corrupt(String),
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
}

impl Store {
    /// Opens (creating if missing) and migrates the database at `url`.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new().max_connections(8).connect_with(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool })
    }

    pub async fn ping(&self) -> Result<(), Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

/// Unix seconds.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Unix milliseconds, for the revocation queue's schedule and the exposure window.
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}
