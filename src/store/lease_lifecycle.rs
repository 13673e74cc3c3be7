//! Leases, and the revocation queue kept on them: a lease in state `revoking` is a task.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Error, Lease, LeaseBegun, LeaseState, NewLeases, Store};
use crate::backends::RevokeHandle;
use crate::clock::{now, now_ms};

/// Why a lease given up as never activated failed, as `last_error` says.
pub const GIVEN_UP: &str = "given up: never activated (the broker stopped while minting)";

const LEASE_COLUMNS: &str = "id, issuer, job_id, role, backend, handle, state, expires_at, attempts, last_error, \
                             revoke_requested_at, updated_at";

impl Store {
    /// Writes an exchange's intent to mint, before any backend is asked: its token as spent and
    /// a pending lease per role, unless the job has ended or the token was exchanged before
    /// (then nothing is written). The job is recorded as seen in the same transaction, so an end
    /// racing with this exchange either finds these leases (and revokes them) or is found by
    /// them. Committed together with concurrent exchanges' writes.
    pub async fn begin_leases(&self, leases: NewLeases) -> Result<LeaseBegun, Error> {
        self.group_commit.begin_leases(leases).await
    }

    /// Records the handle of a minted credential, and its expiry (unix seconds) if later than
    /// the lease's: a lease is never taken for expired while its credential lives. A pending
    /// lease becomes active; a lease whose job ended meanwhile stays `revoking`, now with the
    /// handle the queue needs. Returns the lease's state afterwards. Committed together with
    /// concurrent exchanges' writes.
    pub async fn activate_lease(&self, id: &str, handle: &RevokeHandle, expires_at: i64) -> Result<LeaseState, Error> {
        let handle = serde_json::to_string(handle).map_err(|e| Error::Corrupt(e.to_string()))?;
        self.group_commit.activate_lease(id, handle, expires_at).await
    }

    /// Queues one lease for revocation (e.g. minted for an exchange that then failed).
    pub async fn request_revocation(&self, id: &str) -> Result<(), Error> {
        sqlx::query(
            "UPDATE leases SET state = 'revoking', revoke_requested_at = $1, next_attempt_at = 0, updated_at = $2
             WHERE id = $3 AND state IN ('pending', 'active')",
        )
        .bind(now_ms())
        .bind(now())
        .bind(id)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }

    pub async fn set_lease_state(&self, id: &str, state: LeaseState) -> Result<(), Error> {
        sqlx::query("UPDATE leases SET state = $1, updated_at = $2 WHERE id = $3")
            .bind(state.as_str())
            .bind(now())
            .bind(id)
            .execute(&mut *self.writer().await?)
            .await?;
        Ok(())
    }

    pub async fn leases_of_job(&self, issuer: &str, job_id: &str) -> Result<Vec<Lease>, Error> {
        let sql =
            format!("SELECT {LEASE_COLUMNS} FROM leases WHERE issuer = $1 AND job_id = $2 ORDER BY created_at, id");
        let rows = sqlx::query(&sql).bind(issuer).bind(job_id).fetch_all(&self.pool).await?;
        rows.iter().map(lease_from_row).collect()
    }

    /// The most recent leases, optionally only those in `state`.
    pub async fn leases(&self, state: Option<LeaseState>, limit: i64) -> Result<Vec<Lease>, Error> {
        let sql = format!(
            "SELECT {LEASE_COLUMNS} FROM leases WHERE ($1 IS NULL OR state = $2) ORDER BY created_at DESC, id LIMIT $3"
        );
        let state = state.map(LeaseState::as_str);
        let rows = sqlx::query(&sql).bind(state).bind(state).bind(limit).fetch_all(&self.pool).await?;
        rows.iter().map(lease_from_row).collect()
    }

    /// Claims up to `limit` revocation tasks that are due, for `claim_ms`: no other worker takes
    /// them until the claim lapses, so a worker that dies mid-task delays its tasks, never loses them.
    pub async fn claim_revocations(&self, limit: i64, claim_ms: i64) -> Result<Vec<Lease>, Error> {
        let now_ms = now_ms();
        let sql = format!(
            "UPDATE leases SET claimed_until = $1 WHERE id IN (
                 SELECT id FROM leases
                 WHERE state = 'revoking' AND handle IS NOT NULL AND next_attempt_at <= $2 AND claimed_until <= $3
                 ORDER BY next_attempt_at LIMIT $4)
             -- Checked again on the row itself: under PostgreSQL's READ COMMITTED a competing
             -- claim that committed first makes this one skip the row instead of taking it twice.
             AND state = 'revoking' AND claimed_until <= $3
             RETURNING {LEASE_COLUMNS}"
        );
        let rows = sqlx::query(&sql)
            .bind(now_ms + claim_ms)
            .bind(now_ms)
            .bind(now_ms)
            .bind(limit)
            .fetch_all(&mut *self.writer().await?)
            .await?;
        rows.iter().map(lease_from_row).collect()
    }

    /// Releases every claim. Only for a store one broker process owns (the embedded SQLite
    /// store), at its start: claims still held then belonged to a process that died.
    pub async fn release_claims(&self) -> Result<u64, Error> {
        let released = sqlx::query("UPDATE leases SET claimed_until = 0 WHERE claimed_until > 0")
            .execute(&mut *self.writer().await?)
            .await?
            .rows_affected();
        Ok(released)
    }

    /// The backend confirmed each of `ids`: one statement for all, so a busy queue costs the
    /// store one write per batch rather than one per credential.
    pub async fn confirm_revocations(&self, ids: &[&str]) -> Result<(), Error> {
        if ids.is_empty() {
            return Ok(());
        }
        let placeholders: Vec<String> = (2..ids.len() + 2).map(|n| format!("${n}")).collect();
        let sql = format!(
            "UPDATE leases SET state = 'revoked', attempts = attempts + 1, last_error = NULL, claimed_until = 0,
                 updated_at = $1
             WHERE id IN ({}) AND state = 'revoking'",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(now());
        for id in ids {
            query = query.bind(*id);
        }
        query.execute(&mut *self.writer().await?).await?;
        Ok(())
    }

    /// The attempt failed: the task stays queued, due again at `next_attempt_at` (unix ms).
    pub async fn retry_revocation(&self, id: &str, error: &str, next_attempt_at: i64) -> Result<(), Error> {
        sqlx::query(
            "UPDATE leases SET attempts = attempts + 1, last_error = $1, next_attempt_at = $2, claimed_until = 0,
                 updated_at = $3
             WHERE id = $4 AND state = 'revoking'",
        )
        .bind(error)
        .bind(next_attempt_at)
        .bind(now())
        .bind(id)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }

    /// The address blocks of leases whose credentials may still be used or renewed: pending
    /// (being minted, or its mint grace not yet ended) or active and unexpired.
    pub async fn bound_blocks_in_use(&self, now: i64) -> Result<Vec<String>, Error> {
        let blocks = sqlx::query_scalar(
            "SELECT DISTINCT bound_to FROM leases WHERE bound_to IS NOT NULL
             AND (state = 'pending' OR (state = 'active' AND expires_at > $1))",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        Ok(blocks)
    }

    pub async fn count_leases(&self, state: LeaseState) -> Result<i64, Error> {
        let count = sqlx::query_scalar("SELECT COUNT(*) FROM leases WHERE state = $1")
            .bind(state.as_str())
            .fetch_one(&self.pool)
            .await?;
        Ok(count)
    }

    /// Leases whose credential has expired by itself need no backend call: they become
    /// `expired`. One still being revoked is given `revoking_grace` seconds more, in case the
    /// backend's clock is behind ours.
    pub async fn expire_leases(&self, now: i64, revoking_grace: i64) -> Result<u64, Error> {
        // A GitHub token outlives its lease (GitHub fixes its hour): it is revoked at the lease's
        // expiry instead (`revoke_expired_leases`), and its revocation ends when GitHub's hour does.
        let expired = sqlx::query(
            "UPDATE leases SET state = 'expired', claimed_until = 0, updated_at = $1
             WHERE (state = 'pending' AND expires_at < $2)
                OR (backend <> 'github' AND state = 'active' AND expires_at < $2)
                OR (backend <> 'github' AND state = 'revoking' AND expires_at < $3)",
        )
        .bind(now)
        .bind(now)
        .bind(now - revoking_grace)
        .execute(&mut *self.writer().await?)
        .await?
        .rows_affected();
        Ok(expired)
    }

    /// Queues for revocation the active leases of `backend` whose expiry has passed: credentials
    /// that would outlive their lease unless the broker revokes them.
    pub async fn revoke_expired_leases(&self, backend: &str, now: i64) -> Result<u64, Error> {
        let queued = sqlx::query(
            "UPDATE leases SET state = 'revoking', revoke_requested_at = $1, next_attempt_at = 0, updated_at = $2
             WHERE backend = $3 AND state = 'active' AND expires_at < $2",
        )
        .bind(now * 1000)
        .bind(now)
        .bind(backend)
        .execute(&mut *self.writer().await?)
        .await?
        .rows_affected();
        Ok(queued)
    }

    /// Up to `limit` leases of `backend` begun before `begun_before` (unix seconds) that still
    /// have no handle (see [`Store::give_up_pending_leases`]).
    pub async fn unrecorded_leases(&self, backend: &str, begun_before: i64, limit: i64) -> Result<Vec<Lease>, Error> {
        let sql = format!(
            "SELECT {LEASE_COLUMNS} FROM leases
             WHERE state IN ('pending', 'revoking') AND handle IS NULL AND backend = $1 AND created_at < $2
             ORDER BY created_at, id LIMIT $3"
        );
        let rows = sqlx::query(&sql).bind(backend).bind(begun_before).bind(limit).fetch_all(&self.pool).await?;
        rows.iter().map(lease_from_row).collect()
    }

    /// Gives up, as `failed`, the leases begun before `begun_before` (unix seconds) that still
    /// have no handle: pending, or queued for revocation by their job's end before a handle came.
    /// The caller's bound is longer than any mint takes, so none is coming: the broker died
    /// mid-mint. Without this, such a lease would hold its job's end open until it expired. A
    /// handle that arrives after all is recorded on the failed lease and the exchange revokes
    /// its credential itself (`activate_lease` answers `failed`).
    pub async fn give_up_pending_leases(&self, begun_before: i64) -> Result<u64, Error> {
        let given_up = sqlx::query(
            "UPDATE leases SET state = 'failed', last_error = $1, claimed_until = 0, updated_at = $2
             WHERE state IN ('pending', 'revoking') AND handle IS NULL AND created_at < $3",
        )
        .bind(GIVEN_UP)
        .bind(now())
        .bind(begun_before)
        .execute(&mut *self.writer().await?)
        .await?
        .rows_affected();
        Ok(given_up)
    }

    /// Forgets leases that reached a final state before `before` (unix seconds).
    pub async fn prune_leases(&self, before: i64) -> Result<u64, Error> {
        let deleted =
            sqlx::query("DELETE FROM leases WHERE state IN ('revoked', 'expired', 'failed') AND updated_at < $1")
                .bind(before)
                .execute(&mut *self.writer().await?)
                .await?
                .rows_affected();
        Ok(deleted)
    }
}

fn lease_from_row(row: &AnyRow) -> Result<Lease, Error> {
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
        attempts: row.try_get("attempts")?,
        last_error: row.try_get("last_error")?,
        revoke_requested_at: row.try_get("revoke_requested_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}
