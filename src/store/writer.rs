//! Where the store's writes go. PostgreSQL: any pooled connection; the server orders concurrent
//! writers itself. SQLite: one connection kept for writing, taken in turn. SQLite admits one
//! writer at a time anyway; queueing writers here rather than in SQLite's busy handler (which
//! sleeps up to 100 ms between tries) keeps the wait short. A connection kept for good also skips
//! the pool's health check on every return, and keeps its page cache, which a write by another
//! connection would invalidate.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use sqlx::AnyConnection;
use sqlx::pool::PoolConnection;
use tokio::sync::{Mutex, MutexGuard};

use super::{Error, Store};

/// The SQLite connection kept for writing, and how long a write may wait for its turn.
#[derive(Clone)]
pub(super) struct KeptWriter {
    connection: Arc<Mutex<AnyConnection>>,
    wait: Duration,
}

impl KeptWriter {
    pub(super) fn new(connection: AnyConnection, wait: Duration) -> Self {
        Self { connection: Arc::new(Mutex::new(connection)), wait }
    }
}

/// A connection to write on, for as long as it is held.
pub(super) enum Writer<'a> {
    Pooled(PoolConnection<sqlx::Any>),
    Kept(MutexGuard<'a, AnyConnection>),
}

impl Store {
    /// The connection for one write or one write transaction. Waits like a pool acquire: at most
    /// the configured acquire timeout, then the store is unavailable.
    pub(super) async fn writer(&self) -> Result<Writer<'_>, Error> {
        match &self.kept_writer {
            Some(kept) => match tokio::time::timeout(kept.wait, kept.connection.lock()).await {
                Ok(connection) => Ok(Writer::Kept(connection)),
                Err(_) => Err(Error::Unavailable(sqlx::Error::PoolTimedOut)),
            },
            None => Ok(Writer::Pooled(self.pool.acquire().await?)),
        }
    }
}

impl Deref for Writer<'_> {
    type Target = AnyConnection;

    fn deref(&self) -> &AnyConnection {
        match self {
            Self::Pooled(connection) => connection,
            Self::Kept(connection) => connection,
        }
    }
}

impl DerefMut for Writer<'_> {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Self::Pooled(connection) => connection,
            Self::Kept(connection) => connection,
        }
    }
}
