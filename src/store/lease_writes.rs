//! The exchange's two writes, one lease at a time, and their statements. On PostgreSQL, the
//! group commit's path for a batch of one, and for each write of a batch that failed as a whole;
//! on SQLite, the group commit runs the same statements through rusqlite (`sqlite_batch.rs`).

use sqlx::{AnyConnection, Connection};

use super::replay::record_exchange_on;
use super::{Error, LeaseBegun, LeaseState, NewLease, now};

/// Records a lease's job as seen (its repository, how long to keep it) and returns its state.
/// DO UPDATE has no condition, so the upsert always writes the row and RETURNING always yields
/// the job's state as this transaction left it: one statement, not an upsert and a read.
pub(super) const SEE_JOB: &str = "INSERT INTO jobs (issuer, job_id, repository, state, first_seen_at, keep_until)
 VALUES ($1, $2, $3, 'active', $4, $5)
 ON CONFLICT (issuer, job_id) DO UPDATE SET
     repository = COALESCE(jobs.repository, excluded.repository),
     keep_until = CASE WHEN jobs.keep_until > excluded.keep_until THEN jobs.keep_until ELSE excluded.keep_until END
 RETURNING state";

pub(super) const INSERT_LEASE: &str =
    "INSERT INTO leases (id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at)
 VALUES ($1, $2, $3, $4, $5, NULL, 'pending', $6, $7, $8)";

/// A pending lease becomes active; a lease whose job ended meanwhile keeps its state.
pub(super) const ACTIVATE_LEASE: &str = "UPDATE leases SET handle = $1, updated_at = $2,
     state = CASE WHEN state = 'pending' THEN 'active' ELSE state END
 WHERE id = $3 RETURNING state";

/// See [`super::Store::begin_lease`].
pub(super) async fn begin_lease(connection: &mut AnyConnection, lease: &NewLease<'_>) -> Result<LeaseBegun, Error> {
    let now = now();
    let mut tx = connection.begin().await?;
    if let Some(token) = lease.spends
        && !record_exchange_on(&mut *tx, lease.issuer, token.token_id, token.expires_at).await?
    {
        return Ok(LeaseBegun::Replayed);
    }
    let state: String = sqlx::query_scalar(SEE_JOB)
        .bind(lease.issuer)
        .bind(lease.job_id)
        .bind(lease.repository)
        .bind(now)
        .bind(lease.job_keep_until)
        .fetch_one(&mut *tx)
        .await?;
    if state == "ended" {
        return Ok(LeaseBegun::JobEnded);
    }
    sqlx::query(INSERT_LEASE)
        .bind(lease.id)
        .bind(lease.issuer)
        .bind(lease.job_id)
        .bind(lease.role)
        .bind(lease.backend)
        .bind(now)
        .bind(lease.expires_at)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(LeaseBegun::Begun)
}

/// See [`super::Store::activate_lease`]; `handle` is the handle as stored (JSON).
pub(super) async fn activate_lease(
    connection: &mut AnyConnection,
    id: &str,
    handle: &str,
) -> Result<LeaseState, Error> {
    let state: Option<String> =
        sqlx::query_scalar(ACTIVATE_LEASE).bind(handle).bind(now()).bind(id).fetch_optional(connection).await?;
    let state = state.ok_or_else(|| vanished(id))?;
    state.parse().map_err(Error::Corrupt)
}

pub(super) fn vanished(lease_id: &str) -> Error {
    Error::Corrupt(format!("lease {lease_id} vanished"))
}
