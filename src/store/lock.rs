//! Named locks shared by every broker on one store, for read-modify-writes of state that lives
//! outside it (an AWS role's deny list).

use sha2::{Digest, Sha256};
use sqlx::{Any, Transaction};

use super::{Error, Store, StoreKind};

/// Held until dropped. On PostgreSQL a transaction-scoped advisory lock: dropping the guard
/// ends the transaction and so releases the lock, also when the holder panics.
pub struct StoreLock {
    _transaction: Option<Transaction<'static, Any>>,
}

impl StoreLock {
    /// Releases the lock now. Dropping it releases it too, but the rollback that does so is sent
    /// when the connection is next used, so another broker may still find it taken a moment later.
    pub async fn release(self) -> Result<(), Error> {
        if let Some(transaction) = self._transaction {
            transaction.rollback().await?;
        }
        Ok(())
    }
}

impl Store {
    /// Waits for the lock `name` (at most the statement timeout). SQLite: one broker process
    /// owns the file, so its in-process locks already serialise; nothing to take here.
    pub async fn lock(&self, name: &str) -> Result<StoreLock, Error> {
        if self.kind == StoreKind::Sqlite {
            return Ok(StoreLock { _transaction: None });
        }
        let mut transaction = self.pool.begin().await?;
        // Selecting from the call keeps the row decodable (the lock function returns void).
        sqlx::query("SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock($1)) AS taken")
            .bind(lock_key(name))
            .execute(&mut *transaction)
            .await?;
        Ok(StoreLock { _transaction: Some(transaction) })
    }

    /// The lock `name` if no other broker holds it, without waiting. SQLite: always (see
    /// [`lock`](Self::lock)).
    pub async fn try_lock(&self, name: &str) -> Result<Option<StoreLock>, Error> {
        if self.kind == StoreKind::Sqlite {
            return Ok(Some(StoreLock { _transaction: None }));
        }
        let mut transaction = self.pool.begin().await?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(lock_key(name))
            .fetch_one(&mut *transaction)
            .await?;
        Ok(taken.then_some(StoreLock { _transaction: Some(transaction) }))
    }
}

fn lock_key(name: &str) -> i64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut key = [0u8; 8];
    key.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(key)
}
