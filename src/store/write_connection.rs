//! Where the store's writes go. PostgreSQL: any pooled connection; the server orders concurrent
//! writers itself. SQLite: one connection kept for writing, taken in turn. SQLite admits one
//! writer at a time anyway; queueing writers here rather than in SQLite's busy handler (which
//! sleeps up to 100 ms between tries) keeps the wait short. A connection kept for good also skips
//! the pool's health check on every return, and keeps its page cache, which a write by another
//! connection would invalidate.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{AnyConnection, AnyPool};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::{Error, Store};

/// Hands out the connection to write on: shared by the store and its group-commit task.
#[derive(Clone)]
pub(super) struct Writers {
    pool: AnyPool,
    /// SQLite only.
    kept: Option<KeptWriter>,
}

/// The SQLite connection kept for writing, and how long a write may wait for its turn.
#[derive(Clone)]
struct KeptWriter {
    connection: Arc<Mutex<AnyConnection>>,
    wait: Duration,
}

/// A connection to write on, for as long as it is held, wherever it goes: the group commit hands
/// SQLite's to its thread with the batch.
pub(crate) enum Writer {
    Pooled(PoolConnection<sqlx::Any>),
    Kept(OwnedMutexGuard<AnyConnection>),
}

impl Writers {
    pub(super) fn pooled(pool: AnyPool) -> Self {
        Self { pool, kept: None }
    }

    pub(super) fn kept(pool: AnyPool, connection: AnyConnection, wait: Duration) -> Self {
        Self { pool, kept: Some(KeptWriter { connection: Arc::new(Mutex::new(connection)), wait }) }
    }

    /// The connection for one write or one write transaction. Waits like a pool acquire: at most
    /// the configured acquire timeout, then the store is unavailable.
    pub(super) async fn acquire(&self) -> Result<Writer, Error> {
        match &self.kept {
            Some(kept) => match tokio::time::timeout(kept.wait, kept.connection.clone().lock_owned()).await {
                Ok(connection) => Ok(Writer::Kept(connection)),
                Err(_) => Err(Error::Unavailable(sqlx::Error::PoolTimedOut)),
            },
            None => Ok(Writer::Pooled(self.pool.acquire().await?)),
        }
    }
}

impl Store {
    /// The connection to write on, held until dropped: the store's own writes, and those of the
    /// layers that keep their tables' queries beside them (`src/fleet/records.rs`), in one
    /// transaction with what they count ([`Writer::begin_write`]).
    pub(crate) async fn writer(&self) -> Result<Writer, Error> {
        self.writers.acquire().await
    }
}

impl Writer {
    /// A write transaction. On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`),
    /// waiting its turn: a deferred one that reads first fails at its first write, without
    /// waiting, if another process wrote in between (`ci-creds runners report` slides the fleet's
    /// window).
    pub(crate) async fn begin_write(&mut self) -> Result<sqlx::Transaction<'_, sqlx::Any>, Error> {
        Ok(match self {
            Self::Kept(connection) => sqlx::Connection::begin_with(&mut **connection, "BEGIN IMMEDIATE").await?,
            Self::Pooled(connection) => sqlx::Connection::begin(&mut **connection).await?,
        })
    }
}

impl Deref for Writer {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        match self {
            Self::Pooled(connection) => connection,
            Self::Kept(connection) => connection,
        }
    }
}

impl DerefMut for Writer {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Self::Pooled(connection) => connection,
            Self::Kept(connection) => connection,
        }
    }
}
