//! The record of every judged job with the runner it ran on, for the fleet report, and the
//! fleet's window counted from it in the same transaction (`window/`): the records and the window
//! never disagree, whatever instant the broker stops at. The statements run on the store's write
//! transaction (`Store::writer`), one engine's SQL for SQLite and PostgreSQL.

use futures_util::TryStreamExt;
use sqlx::Row;

use super::judged_job::RunnerJob;
use super::window::{self, COUNTED_COLUMNS, Changes, Hold, counted_job};
use crate::store::{Error, Store, StoreKind, Writer, placeholders, prune_claims, rows_per_statement};

/// When a runner was last seen, over every kept record: what staleness is judged on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerLastSeen {
    pub issuer: String,
    pub runner_key: String,
    /// Whether any of its jobs ran on a single-use tier; a runner that never did is persistent.
    pub single_use: bool,
    pub self_hosted: bool,
    /// Unix seconds.
    pub last_seen: i64,
}

impl Store {
    /// Records judged jobs, 128 to a transaction, each kept `keep_for` seconds past when it was
    /// seen, and counts them in the fleet's window (`window/`); a job judged again
    /// (another token) keeps its first record, adds the roles granted this time, and fills in
    /// what it tells of its runner that the first did not. The writer is taken again for each
    /// transaction, so an exchange's own writes wait for one at most, not for the whole batch.
    pub async fn record_runner_jobs(&self, mut jobs: Vec<RunnerJob>, keep_for: i64) -> Result<(), Error> {
        merge_repeats(&mut jobs);
        for rows in jobs.chunks(JOBS_PER_TRANSACTION) {
            record_runner_job_rows(&mut self.writer().await?, self.kind(), rows, keep_for).await?;
        }
        Ok(())
    }

    /// Every job seen since `since` (unix seconds), oldest first.
    pub async fn runner_jobs_since(&self, since: i64) -> Result<Vec<RunnerJob>, Error> {
        let sql =
            format!("SELECT {COUNTED_COLUMNS} FROM runner_jobs WHERE seen_at >= $1 ORDER BY seen_at, issuer, job_id");
        let rows = sqlx::query(&sql).bind(since).fetch_all(self.reads()).await?;
        rows.iter().map(counted_job).collect()
    }

    /// Every identified runner with its last job, over every kept record, one row each.
    pub async fn runners_last_seen(&self) -> Result<Vec<RunnerLastSeen>, Error> {
        let rows = sqlx::query(
            "SELECT issuer, runner_key, MAX(single_use),
                    MAX(CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END), MAX(seen_at)
             FROM runner_jobs WHERE runner_key IS NOT NULL
             GROUP BY issuer, runner_key ORDER BY issuer, runner_key",
        )
        .fetch_all(self.reads())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(RunnerLastSeen {
                    issuer: row.try_get(0)?,
                    runner_key: row.try_get(1)?,
                    single_use: row.try_get::<i64, _>(2)? != 0,
                    self_hosted: row.try_get::<i64, _>(3)? != 0,
                    last_seen: row.try_get(4)?,
                })
            })
            .collect()
    }

    /// Forgets runner records, judged jobs and refusal counts past their keep; the jobs forgotten
    /// are no longer counted in the fleet's window.
    pub async fn prune_runners(&self, now: i64) -> Result<u64, Error> {
        let mut writer = self.writer().await?;
        let runners = prune_claims(&mut writer, now).await?;
        let jobs = prune_runner_jobs(&mut writer, self.kind(), now).await?;
        let refusals =
            sqlx::query("DELETE FROM runner_refusals WHERE keep_until < $1").bind(now).execute(&mut *writer).await?;
        Ok(runners + jobs + refusals.rows_affected())
    }
}

/// Judged jobs recorded (and counted in the fleet's window) per transaction.
const JOBS_PER_TRANSACTION: usize = 128;

/// One row per job, as the upsert would make it: PostgreSQL refuses an upsert that touches one
/// row twice, and one batch can hold several tokens of a job.
fn merge_repeats(jobs: &mut Vec<RunnerJob>) {
    jobs.sort_by(|a, b| (&a.issuer, &a.job_id).cmp(&(&b.issuer, &b.job_id)));
    jobs.dedup_by(|later, first| {
        let same = later.issuer == first.issuer && later.job_id == first.job_id;
        if same {
            first.roles_granted += later.roles_granted;
            first.refused |= later.refused;
        }
        same
    });
}

/// The group a recorded job was counted in (`runner_jobs`' own columns), as `window::runner_of` names it.
const COUNTED_RUNNER: &str = "CASE WHEN runner_jobs.runner_key IS NOT NULL THEN 'k:' || runner_jobs.runner_key
     WHEN runner_jobs.runner_name IS NOT NULL THEN 'n:' || runner_jobs.runner_name ELSE '-' END";

async fn record_runner_job_rows(
    connection: &mut Writer,
    kind: StoreKind,
    rows: &[RunnerJob],
    keep_for: i64,
) -> Result<(), Error> {
    let mut tx = connection.begin_write().await?;
    let since = window::since(&mut tx, kind, Hold::Shared).await?;
    for rows in rows.chunks(rows_per_statement(13)) {
        upsert_runner_jobs(&mut tx, kind, rows, keep_for).await?;
    }
    let mut judged_again = Vec::new();
    for rows in rows.chunks(rows_per_statement(2)) {
        judged_again.extend(judged_again_of(&mut tx, kind, rows).await?);
    }
    let mut changes = Changes::default();
    for row in &judged_again {
        let job = counted_job(row)?;
        let told_more_from: Option<String> = row.try_get(12)?;
        let in_window = job.seen_at >= since;
        // `rows` is sorted by issuer and job id (`merge_repeats`): the roles granted this time.
        let granted_now = rows
            .binary_search_by(|row| (row.issuer.as_str(), row.job_id.as_str()).cmp(&(&job.issuer, &job.job_id)))
            .map_or(0, |at| rows[at].roles_granted);
        changes.hour(&job, 0, granted_now);
        if let Some(from) = told_more_from {
            changes.remove(&job, &from, in_window);
            changes.add(&job, in_window);
        }
    }
    // Every other job is new, recorded as given.
    let again: std::collections::HashSet<(String, String)> =
        judged_again.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect::<Result<_, Error>>()?;
    for job in rows.iter().filter(|job| !again.contains(&(job.issuer.clone(), job.job_id.clone()))) {
        changes.hour(job, 1, job.roles_granted);
        changes.add(job, job.seen_at >= since);
    }
    changes.apply(&mut tx, kind, since).await?;
    tx.commit().await?;
    Ok(())
}

/// Of the jobs just written, those judged before (as recorded, and the group they were counted
/// in if this judgement told more of their runner): every job written is either new (judged
/// once) or judged again now, and its row stays locked by this transaction.
async fn judged_again_of(
    connection: &mut sqlx::AnyConnection,
    kind: StoreKind,
    rows: &[RunnerJob],
) -> Result<Vec<sqlx::any::AnyRow>, Error> {
    let sql = format!(
        "SELECT {COUNTED_COLUMNS}, told_more_from FROM runner_jobs
         WHERE judged > 1 AND (issuer, job_id) IN (SELECT column1, column2 FROM (VALUES {}) AS asked)",
        placeholders(kind, rows.len(), 2)
    );
    let mut query = sqlx::query(&sql);
    for job in rows {
        query = query.bind(&job.issuer).bind(&job.job_id);
    }
    Ok(query.fetch_all(connection).await?)
}

/// Writes judged jobs: a job judged again counts one more judgement, and notes the group it was
/// counted in where this judgement told more of its runner.
async fn upsert_runner_jobs(
    connection: &mut sqlx::AnyConnection,
    kind: StoreKind,
    rows: &[RunnerJob],
    keep_for: i64,
) -> Result<(), Error> {
    let sql = format!(
        "INSERT INTO runner_jobs (issuer, job_id, repository, runner_key, runner_name, runner_group,
             runner_environment, tier, single_use, roles_granted, refused, seen_at, keep_until)
         VALUES {}
         ON CONFLICT (issuer, job_id) DO UPDATE SET
             roles_granted = runner_jobs.roles_granted + excluded.roles_granted,
             refused = CASE WHEN runner_jobs.refused = 1 OR excluded.refused = 1 THEN 1 ELSE 0 END,
             runner_key = COALESCE(runner_jobs.runner_key, excluded.runner_key),
             runner_name = COALESCE(runner_jobs.runner_name, excluded.runner_name),
             runner_group = COALESCE(runner_jobs.runner_group, excluded.runner_group),
             keep_until = excluded.keep_until,
             judged = runner_jobs.judged + 1,
             told_more_from = CASE
                 WHEN (runner_jobs.runner_key IS NULL AND excluded.runner_key IS NOT NULL)
                   OR (runner_jobs.runner_name IS NULL AND excluded.runner_name IS NOT NULL)
                   OR (runner_jobs.runner_group IS NULL AND excluded.runner_group IS NOT NULL)
                 THEN {COUNTED_RUNNER} END",
        placeholders(kind, rows.len(), 13)
    );
    let mut query = sqlx::query(&sql);
    for job in rows {
        query = query
            .bind(&job.issuer)
            .bind(&job.job_id)
            .bind(&job.repository)
            .bind(&job.runner_key)
            .bind(&job.runner_name)
            .bind(&job.runner_group)
            .bind(&job.runner_environment)
            .bind(&job.tier)
            .bind(i64::from(job.single_use))
            .bind(job.roles_granted)
            .bind(i64::from(job.refused))
            .bind(job.seen_at)
            .bind(job.seen_at.saturating_add(keep_for));
    }
    query.execute(connection).await?;
    Ok(())
}

/// Deletes the judged jobs past their keep and takes them from the fleet's window.
async fn prune_runner_jobs(connection: &mut Writer, kind: StoreKind, now: i64) -> Result<u64, Error> {
    let mut tx = connection.begin_write().await?;
    let since = window::since(&mut tx, kind, Hold::Alone).await?;
    let mut changes = Changes::alone();
    let mut pruned = 0;
    {
        let sql = format!("DELETE FROM runner_jobs WHERE keep_until < $1 RETURNING {COUNTED_COLUMNS}");
        let mut deleted = sqlx::query(&sql).bind(now).fetch(&mut *tx);
        while let Some(row) = deleted.try_next().await? {
            let job = counted_job(&row)?;
            changes.hour(&job, -1, -job.roles_granted);
            changes.remove(&job, &job.runner(), job.seen_at >= since);
            pruned += 1;
        }
    }
    changes.apply(&mut tx, kind, since).await?;
    tx.commit().await?;
    Ok(pruned)
}
