//! Jobs: seen by an exchange, ended by a webhook or by the job itself.

use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Error, Store};
use crate::clock::{now, now_ms};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Active,
    Ended,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Ended => "ended",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobRecord {
    pub issuer: String,
    pub job_id: String,
    pub repository: Option<String>,
    pub state: JobState,
    pub ended_by: Option<String>,
    /// Unix seconds.
    pub ended_at: Option<i64>,
    pub first_seen_at: i64,
    pub leases: i64,
    pub leases_revoking: i64,
    /// The runner it ran on, `{id, name, group, labels, source}`, as the CI's API or a webhook said.
    pub runner: Option<serde_json::Value>,
    /// The address its latest exchange came from.
    pub address: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndOutcome {
    /// This webhook delivery was applied before; nothing changed.
    Duplicate,
    /// The job is ended; this many of its leases were queued for revocation now.
    Ended { revoking: u64 },
    /// The job had ended before (by another source or delivery); this many leases were queued
    /// now (a credential minted while it ended).
    AlreadyEnded { revoking: u64 },
}

impl Store {
    /// Ends a job: records it as ended (even if never seen, so a later exchange is refused)
    /// and moves every pending or active lease of it to `revoking`, in one transaction, so the
    /// intent to revoke is durable before any backend is called. With a webhook `delivery`
    /// (source, id), a delivery applied before is a `Duplicate`.
    pub async fn end_job(
        &self,
        issuer: &str,
        job_id: &str,
        ended_by: &str,
        delivery: Option<(&str, &str)>,
        keep_until: i64,
    ) -> Result<EndOutcome, Error> {
        let (now, now_ms) = (now(), now_ms());
        let mut writer = self.writer().await?;
        let mut tx = writer.begin_write().await?;
        if let Some((source, delivery_id)) = delivery {
            let fresh = sqlx::query(
                "INSERT INTO webhook_deliveries (source, delivery_id, received_at) VALUES ($1, $2, $3)
                 ON CONFLICT (source, delivery_id) DO NOTHING",
            )
            .bind(source)
            .bind(delivery_id)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if fresh == 0 {
                return Ok(EndOutcome::Duplicate);
            }
        }
        let before: Option<String> = sqlx::query_scalar("SELECT state FROM jobs WHERE issuer = $1 AND job_id = $2")
            .bind(issuer)
            .bind(job_id)
            .fetch_optional(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO jobs (issuer, job_id, state, ended_by, ended_at, first_seen_at, keep_until)
             VALUES ($1, $2, 'ended', $3, $4, $5, $6)
             ON CONFLICT (issuer, job_id) DO UPDATE SET
                 state = 'ended',
                 ended_by = COALESCE(jobs.ended_by, excluded.ended_by),
                 ended_at = COALESCE(jobs.ended_at, excluded.ended_at),
                 keep_until = CASE WHEN jobs.keep_until > excluded.keep_until THEN jobs.keep_until ELSE excluded.keep_until END",
        )
        .bind(issuer)
        .bind(job_id)
        .bind(ended_by)
        .bind(now)
        .bind(now)
        .bind(keep_until)
        .execute(&mut *tx)
        .await?;
        let revoking = sqlx::query(
            "UPDATE leases SET state = 'revoking', revoke_requested_at = $1, next_attempt_at = 0, updated_at = $2
             WHERE issuer = $3 AND job_id = $4 AND state IN ('pending', 'active')",
        )
        .bind(now_ms)
        .bind(now)
        .bind(issuer)
        .bind(job_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(match before.as_deref() {
            Some("ended") => EndOutcome::AlreadyEnded { revoking },
            _ => EndOutcome::Ended { revoking },
        })
    }

    /// The ids of `issuer`'s jobs that lie within the one `parent` names (`{parent}/…`): an
    /// Azure Pipelines run's jobs, to be ended with it. `LIKE` finds them by prefix with `%`, `_`
    /// and the escape character escaped; the exact comparison of the prefix keeps SQLite's
    /// case-insensitive `LIKE` from matching more.
    pub async fn job_ids_within(&self, issuer: &str, parent: &str) -> Result<Vec<String>, Error> {
        let prefix = format!("{parent}/");
        let pattern = format!("{}%", escape_like(&prefix));
        let ids = sqlx::query_scalar(
            "SELECT job_id FROM jobs WHERE issuer = $1 AND job_id LIKE $2 ESCAPE '\\'
                 AND substr(job_id, 1, length($3)) = $3
             ORDER BY job_id",
        )
        .bind(issuer)
        .bind(pattern)
        .bind(prefix)
        .fetch_all(&self.pool)
        .await?;
        Ok(ids)
    }

    /// Whether `issuer`'s job `job_id` is recorded as ended.
    pub async fn job_ended(&self, issuer: &str, job_id: &str) -> Result<bool, Error> {
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM jobs WHERE issuer = $1 AND job_id = $2")
            .bind(issuer)
            .bind(job_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(state.as_deref() == Some("ended"))
    }

    pub async fn count_jobs(&self, state: JobState) -> Result<i64, Error> {
        let count = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE state = $1")
            .bind(state.as_str())
            .fetch_one(&self.pool)
            .await?;
        Ok(count)
    }

    pub async fn jobs(&self, limit: i64) -> Result<Vec<JobRecord>, Error> {
        let rows = sqlx::query(
            "SELECT j.issuer, j.job_id, j.repository, j.state, j.ended_by, j.ended_at, j.first_seen_at, j.runner, j.address,
                    COUNT(l.id) AS leases,
                    CAST(COALESCE(SUM(CASE WHEN l.state = 'revoking' THEN 1 ELSE 0 END), 0) AS BIGINT) AS leases_revoking
             FROM jobs j LEFT JOIN leases l ON l.issuer = j.issuer AND l.job_id = j.job_id
             GROUP BY j.issuer, j.job_id, j.repository, j.state, j.ended_by, j.ended_at, j.first_seen_at, j.runner, j.address
             ORDER BY j.first_seen_at DESC, j.job_id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(job_from_row).collect()
    }

    /// Forgets jobs past their retention that hold no lease any more, and old webhook deliveries.
    pub async fn prune_jobs(&self, now: i64, deliveries_before: i64) -> Result<u64, Error> {
        let mut writer = self.writer().await?;
        let jobs = sqlx::query(
            "DELETE FROM jobs WHERE keep_until < $1 AND NOT EXISTS
                 (SELECT 1 FROM leases l WHERE l.issuer = jobs.issuer AND l.job_id = jobs.job_id)",
        )
        .bind(now)
        .execute(&mut *writer)
        .await?
        .rows_affected();
        sqlx::query("DELETE FROM webhook_deliveries WHERE received_at < $1")
            .bind(deliveries_before)
            .execute(&mut *writer)
            .await?;
        Ok(jobs)
    }
}

/// `text` as a literal in a `LIKE … ESCAPE '\\'` pattern.
fn escape_like(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

fn job_from_row(row: &AnyRow) -> Result<JobRecord, Error> {
    let state: String = row.try_get("state")?;
    let state = match state.as_str() {
        "active" => JobState::Active,
        "ended" => JobState::Ended,
        other => return Err(Error::Corrupt(format!("unknown job state `{other}`"))),
    };
    Ok(JobRecord {
        issuer: row.try_get("issuer")?,
        job_id: row.try_get("job_id")?,
        repository: row.try_get("repository")?,
        state,
        ended_by: row.try_get("ended_by")?,
        ended_at: row.try_get("ended_at")?,
        first_seen_at: row.try_get("first_seen_at")?,
        leases: row.try_get("leases")?,
        leases_revoking: row.try_get("leases_revoking")?,
        // Written by the broker from bounded facts; an unreadable record shows as none.
        runner: row.try_get::<Option<String>, _>("runner")?.and_then(|text| serde_json::from_str(&text).ok()),
        address: row.try_get("address")?,
    })
}
