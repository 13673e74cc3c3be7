use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};

use super::{Error, Lease, LeaseState, NewLease};
use crate::backends::RevokeHandle;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

impl Store {
    /// Opens (creating if missing) and migrates the database at `url`.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool })
    }

    pub async fn ping(&self) -> Result<(), Error> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Records that a token was exchanged. False when it already was: a replay.
    pub async fn record_exchange(
        &self,
        issuer: &str,
        token_id: &str,
        expires_at: i64,
    ) -> Result<bool, Error> {
        let inserted = sqlx::query(
            "INSERT INTO exchanged_tokens (issuer, token_id, expires_at) VALUES (?, ?, ?)
             ON CONFLICT (issuer, token_id) DO NOTHING",
        )
        .bind(issuer)
        .bind(token_id)
        .bind(expires_at)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(inserted == 1)
    }

    /// Forgets exchanged tokens that expired before `before` (unix seconds): they can no longer
    /// verify, so they can no longer be replayed.
    pub async fn prune_exchanged_tokens(&self, before: i64) -> Result<u64, Error> {
        let deleted = sqlx::query("DELETE FROM exchanged_tokens WHERE expires_at < ?")
            .bind(before)
            .execute(&self.pool)
            .await?
            .rows_affected();
        Ok(deleted)
    }

    /// Writes the intent to mint, before the backend is asked.
    pub async fn begin_lease(&self, lease: &NewLease<'_>) -> Result<(), Error> {
        let now = now();
        sqlx::query(
            "INSERT INTO leases (id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at)
             VALUES (?, ?, ?, ?, ?, NULL, 'pending', ?, ?, ?)",
        )
        .bind(lease.id)
        .bind(lease.issuer)
        .bind(lease.job_id)
        .bind(lease.role)
        .bind(lease.backend)
        .bind(now)
        .bind(lease.expires_at)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records the handle of a credential the backend minted; only a pending lease becomes active.
    pub async fn activate_lease(&self, id: &str, handle: &RevokeHandle) -> Result<bool, Error> {
        let handle = serde_json::to_string(handle).map_err(|e| Error::Corrupt(e.to_string()))?;
        let updated = sqlx::query(
            "UPDATE leases SET handle = ?, state = 'active', updated_at = ? WHERE id = ? AND state = 'pending'",
        )
        .bind(handle)
        .bind(now())
        .bind(id)
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(updated == 1)
    }

    pub async fn set_lease_state(&self, id: &str, state: LeaseState) -> Result<(), Error> {
        sqlx::query("UPDATE leases SET state = ?, updated_at = ? WHERE id = ?")
            .bind(state.as_str())
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn leases_of_job(&self, issuer: &str, job_id: &str) -> Result<Vec<Lease>, Error> {
        let rows = sqlx::query(
            "SELECT id, issuer, job_id, role, backend, handle, state, expires_at FROM leases
             WHERE issuer = ? AND job_id = ? ORDER BY created_at, id",
        )
        .bind(issuer)
        .bind(job_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(lease_from_row).collect()
    }
}

fn lease_from_row(row: &SqliteRow) -> Result<Lease, Error> {
    let handle: Option<String> = row.try_get("handle")?;
    let handle = handle
        .map(|h| serde_json::from_str(&h))
        .transpose()
        .map_err(|e| Error::Corrupt(format!("lease handle: {e}")))?;
    let state: String = row.try_get("state")?;
    Ok(Lease {
        id: row.try_get("id")?,
        issuer: row.try_get("issuer")?,
        job_id: row.try_get("job_id")?,
        role: row.try_get("role")?,
        backend: row.try_get("backend")?,
        handle,
        state: state.parse().map_err(Error::Corrupt)?,
        expires_at: row.try_get("expires_at")?,
    })
}
