//! Runners as identities: the single-use claim each runner of a single-use tier makes on its
//! first job, and what the store knows of the runner a job ran on. Shared by every replica; each
//! claim is one statement, so two replicas seeing two jobs on one runner at once agree on which
//! came first. The record of every judged job, for the fleet report, is the fleet's
//! (`src/fleet/records.rs`).

use sqlx::Row;

use super::{Error, Store, Writer};
use crate::clock::now;

/// What claiming a runner for a job found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunnerClaim {
    /// The runner's first job, or that job again (another of its tokens).
    FirstJob,
    /// The runner served `first_job_id` before, or was found reused earlier: no job on it gets
    /// a single-use tier's credentials until its record expires.
    Reused { first_job_id: String },
}

impl Store {
    /// Claims `runner_key` of `issuer` for `job_id`, kept until `keep_until` (unix seconds) past
    /// its last job. A record past its keep is claimed afresh.
    pub async fn claim_runner(
        &self,
        issuer: &str,
        runner_key: &str,
        job_id: &str,
        keep_until: i64,
    ) -> Result<RunnerClaim, Error> {
        let now = now();
        let row = sqlx::query(
            "INSERT INTO runners (issuer, runner_key, first_job_id, reused, first_seen, last_seen, keep_until)
             VALUES ($1, $2, $3, 0, $4, $4, $5)
             ON CONFLICT (issuer, runner_key) DO UPDATE SET
                 reused = CASE WHEN runners.keep_until < $4 THEN 0
                               WHEN runners.reused = 1 OR runners.first_job_id <> excluded.first_job_id THEN 1
                               ELSE 0 END,
                 first_job_id = CASE WHEN runners.keep_until < $4 THEN excluded.first_job_id ELSE runners.first_job_id END,
                 first_seen = CASE WHEN runners.keep_until < $4 THEN excluded.first_seen ELSE runners.first_seen END,
                 last_seen = excluded.last_seen,
                 keep_until = excluded.keep_until
             RETURNING first_job_id, reused",
        )
        .bind(issuer)
        .bind(runner_key)
        .bind(job_id)
        .bind(now)
        .bind(keep_until)
        .fetch_one(&mut *self.writer().await?)
        .await?;
        let (first_job_id, reused): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
        Ok(if reused == 0 { RunnerClaim::FirstJob } else { RunnerClaim::Reused { first_job_id } })
    }

    /// The runners found reused, by (issuer, runner key).
    pub async fn reused_runners(&self) -> Result<Vec<(String, String)>, Error> {
        let rows = sqlx::query("SELECT issuer, runner_key FROM runners WHERE reused = 1 ORDER BY issuer, runner_key")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
    }

    /// The runner a webhook or an earlier answer of the CI's API named for a job, as JSON.
    pub async fn job_runner(&self, issuer: &str, job_id: &str) -> Result<Option<String>, Error> {
        let row = sqlx::query("SELECT runner FROM jobs WHERE issuer = $1 AND job_id = $2")
            .bind(issuer)
            .bind(job_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(match row {
            Some(row) => row.try_get(0)?,
            None => None,
        })
    }
}

/// Forgets the claims past their keep, on `writer`: the fleet prunes them with its own records
/// (`src/fleet/records.rs`), the writer held once for all.
pub(crate) async fn prune_claims(writer: &mut Writer, now: i64) -> Result<u64, Error> {
    let pruned = sqlx::query("DELETE FROM runners WHERE keep_until < $1").bind(now).execute(&mut **writer).await?;
    Ok(pruned.rows_affected())
}
