//! The reconciler's work list: jobs that hold live leases, have no recorded end, and were not
//! asked about lately. Claimed as the revocation queue is, so replicas sharing PostgreSQL never
//! ask about one job twice in a round, and a replica that dies mid-round delays its jobs by at
//! most its claim.

use sqlx::Row;

use super::{Error, Store};
use crate::clock::now_ms;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobToAsk {
    pub job_id: String,
    /// A `JobLocator` as JSON.
    pub locator: String,
}

impl Store {
    /// Claims, for `claim_ms`, up to `limit` jobs of `issuer` last asked about before
    /// `asked_before_ms`: those asked longest ago first.
    pub async fn claim_jobs_to_ask(
        &self,
        issuer: &str,
        asked_before_ms: i64,
        limit: i64,
        claim_ms: i64,
    ) -> Result<Vec<JobToAsk>, Error> {
        let now_ms = now_ms();
        let rows = sqlx::query(
            "UPDATE jobs SET ask_claimed_until = $1
             WHERE issuer = $2 AND job_id IN (
                 SELECT j.job_id FROM jobs j
                 WHERE j.issuer = $2 AND j.state = 'active' AND j.ci_api_locator IS NOT NULL
                   AND j.last_asked_at < $3 AND j.ask_claimed_until <= $4
                   AND EXISTS (SELECT 1 FROM leases l
                               WHERE l.issuer = j.issuer AND l.job_id = j.job_id AND l.state IN ('pending', 'active'))
                 ORDER BY j.last_asked_at, j.job_id LIMIT $5)
             -- Checked again on the row itself: a competing claim that committed first wins.
             AND state = 'active' AND ask_claimed_until <= $4
             RETURNING job_id, ci_api_locator",
        )
        .bind(now_ms + claim_ms)
        .bind(issuer)
        .bind(asked_before_ms)
        .bind(now_ms)
        .bind(limit)
        .fetch_all(&mut *self.writer().await?)
        .await?;
        rows.iter().map(|row| Ok(JobToAsk { job_id: row.try_get(0)?, locator: row.try_get(1)? })).collect()
    }

    /// The CI was asked about the job at `asked_at_ms` (whatever it answered): it waits its turn
    /// again, and keeps the runner the CI named, if any.
    pub async fn record_asked(
        &self,
        issuer: &str,
        job_id: &str,
        asked_at_ms: i64,
        runner: Option<&str>,
    ) -> Result<(), Error> {
        sqlx::query(
            "UPDATE jobs SET last_asked_at = $1, ask_claimed_until = 0, runner = COALESCE($2, runner)
             WHERE issuer = $3 AND job_id = $4",
        )
        .bind(asked_at_ms)
        .bind(runner)
        .bind(issuer)
        .bind(job_id)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }

    /// Gives back a claim without asking: the job keeps its place at the head of the list.
    pub async fn release_ask_claim(&self, issuer: &str, job_id: &str) -> Result<(), Error> {
        sqlx::query("UPDATE jobs SET ask_claimed_until = 0 WHERE issuer = $1 AND job_id = $2")
            .bind(issuer)
            .bind(job_id)
            .execute(&mut *self.writer().await?)
            .await?;
        Ok(())
    }

    /// Releases every claim on asking. Only for a store one broker process owns (SQLite), at start.
    pub async fn release_ask_claims(&self) -> Result<u64, Error> {
        let released = sqlx::query("UPDATE jobs SET ask_claimed_until = 0 WHERE ask_claimed_until > 0")
            .execute(&mut *self.writer().await?)
            .await?
            .rows_affected();
        Ok(released)
    }

    /// A runner a webhook named for a job (a start or completion event), kept until `keep_until`
    /// at least. Start events come before the job's first exchange, so an unseen job is recorded
    /// (active, with no lease). Facts the CI's API gave are kept over a webhook's.
    pub async fn record_webhook_runner(
        &self,
        issuer: &str,
        job_id: &str,
        runner: &str,
        keep_until: i64,
    ) -> Result<(), Error> {
        // `source` is RunnerFacts' last field, and every string inside is JSON-escaped, so only
        // the CI API's own facts end this way.
        sqlx::query(
            "INSERT INTO jobs (issuer, job_id, state, first_seen_at, keep_until, runner)
             VALUES ($1, $2, 'active', $3, $4, $5)
             ON CONFLICT (issuer, job_id) DO UPDATE SET
                 runner = CASE WHEN jobs.runner LIKE '%\"source\":\"ci_api\"}' THEN jobs.runner ELSE excluded.runner END,
                 keep_until = CASE WHEN jobs.keep_until > excluded.keep_until THEN jobs.keep_until ELSE excluded.keep_until END",
        )
        .bind(issuer)
        .bind(job_id)
        .bind(now_ms() / 1000)
        .bind(keep_until)
        .bind(runner)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }
}
