//! The fleet report's aggregates, computed where the judged jobs are: each read is a `GROUP BY`
//! whose answer grows with runners, tiers and days, never with jobs. One SQL text for SQLite and
//! PostgreSQL (sums are cast to BIGINT: PostgreSQL sums BIGINT into NUMERIC).

use std::collections::HashSet;

use futures_util::TryStreamExt;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::refusals::RefusalCount;
use crate::store::{Error, Store, StoreKind};

/// PostgreSQL: how long each of the fleet's queries may run. They read every judged job of the
/// window, in the background or for `runners report`, so they may take longer than the store's
/// `statement_timeout`, which bounds the exchange's statements.
pub(super) const FLEET_STATEMENT_TIMEOUT: &str = "15min";

/// Jobs seen in the window, and how many of them ran self-hosted, and self-hosted on a
/// single-use tier.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobTotals {
    pub jobs: i64,
    pub self_hosted: i64,
    pub self_hosted_single_use: i64,
}

/// Jobs and roles granted in one tier (`None`: jobs in no tier).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierJobs {
    pub tier: Option<String>,
    pub jobs: i64,
    pub roles_granted: i64,
}

/// Jobs in one tier on one day (days since the epoch, UTC).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DayJobs {
    pub day: i64,
    pub tier: Option<String>,
    pub jobs: i64,
}

/// One runner's jobs in the window: grouped by issuer and key where a key is known, else by
/// issuer and name (`name_key`), else one group per issuer for the jobs whose runner nobody told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerJobsSeen {
    pub issuer: String,
    pub runner_key: Option<String>,
    /// The name grouped on when no key is known.
    pub name_key: Option<String>,
    /// The first name, group and environment told, oldest job first.
    pub runner_name: Option<String>,
    pub runner_group: Option<String>,
    pub runner_environment: Option<String>,
    /// The tier and single-use flag of its latest job.
    pub tier: Option<String>,
    pub single_use: bool,
    pub first_seen: i64,
    pub last_seen: i64,
    pub jobs: i64,
    pub repositories: i64,
    /// Distinct jobs it served on a single-use tier.
    pub single_use_jobs: i64,
    /// The store marked it reused when it claimed a single-use tier's job.
    pub marked_reused: bool,
}

/// Everything the fleet report is computed from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetAggregates {
    /// Unix seconds: the jobs seen since then are counted. The start asked for, or up to a minute
    /// after it where the maintained window was already there.
    pub since: i64,
    pub totals: JobTotals,
    pub tiers: Vec<TierJobs>,
    pub days: Vec<DayJobs>,
    pub runners: Vec<RunnerJobsSeen>,
    /// Persistent self-hosted runners whose last job, over every kept record, is older than
    /// `stale_before`.
    pub stale_persistent: i64,
    /// Refused attempts per runner and reason in the window.
    pub refusals: Vec<RefusalCount>,
}

impl Store {
    /// The aggregates computed from every judged job of the window, whatever its start: a pass
    /// over the jobs, so it takes time that grows with them.
    pub async fn fleet_aggregates_from_jobs(
        &self,
        since: i64,
        stale_before: i64,
        each: impl FnMut(RunnerJobsSeen),
    ) -> Result<FleetAggregates, Error> {
        // One read transaction: every figure from the same records, and on PostgreSQL the
        // fleet's own statement timeout.
        let mut reading = self.reads().begin().await?;
        if self.kind() == StoreKind::Postgres {
            sqlx::query(&format!("SET LOCAL statement_timeout = '{FLEET_STATEMENT_TIMEOUT}'"))
                .execute(&mut *reading)
                .await?;
        }
        let reused: HashSet<(String, String)> = self.reused_runners().await?.into_iter().collect();
        let aggregates = FleetAggregates {
            since,
            totals: job_totals(&mut reading, since).await?,
            tiers: tier_jobs(&mut reading, since).await?,
            days: day_jobs(&mut reading, since).await?,
            runners: Vec::new(),
            stale_persistent: stale_persistent(&mut reading, stale_before).await?,
            refusals: self.runner_refusals_since(since).await?,
        };
        runner_jobs_seen(&mut reading, since, &reused, each).await?;
        reading.commit().await?;
        Ok(aggregates)
    }
}

async fn job_totals(connection: &mut AnyConnection, since: i64) -> Result<JobTotals, Error> {
    let row = sqlx::query(
        "SELECT COUNT(*),
                    CAST(COALESCE(SUM(CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END), 0) AS BIGINT),
                    CAST(COALESCE(SUM(CASE WHEN runner_environment = 'self-hosted' AND single_use = 1
                                      THEN 1 ELSE 0 END), 0) AS BIGINT)
             FROM runner_jobs WHERE seen_at >= $1",
    )
    .bind(since)
    .fetch_one(&mut *connection)
    .await?;
    Ok(JobTotals { jobs: row.try_get(0)?, self_hosted: row.try_get(1)?, self_hosted_single_use: row.try_get(2)? })
}

async fn tier_jobs(connection: &mut AnyConnection, since: i64) -> Result<Vec<TierJobs>, Error> {
    let rows = sqlx::query(
        "SELECT tier, COUNT(*), CAST(COALESCE(SUM(roles_granted), 0) AS BIGINT)
             FROM runner_jobs WHERE seen_at >= $1 GROUP BY tier",
    )
    .bind(since)
    .fetch_all(&mut *connection)
    .await?;
    rows.iter()
        .map(|row| Ok(TierJobs { tier: row.try_get(0)?, jobs: row.try_get(1)?, roles_granted: row.try_get(2)? }))
        .collect()
}

async fn day_jobs(connection: &mut AnyConnection, since: i64) -> Result<Vec<DayJobs>, Error> {
    let rows = sqlx::query(
        "SELECT seen_at / 86400, tier, COUNT(*) FROM runner_jobs WHERE seen_at >= $1
             GROUP BY seen_at / 86400, tier",
    )
    .bind(since)
    .fetch_all(&mut *connection)
    .await?;
    rows.iter().map(|row| Ok(DayJobs { day: row.try_get(0)?, tier: row.try_get(1)?, jobs: row.try_get(2)? })).collect()
}

/// One row per runner. Each job is numbered within its runner, oldest first (`n`), so the
/// first name told and the latest job's tier are picked by number, in one pass.
async fn runner_jobs_seen(
    connection: &mut AnyConnection,
    since: i64,
    reused: &HashSet<(String, String)>,
    mut each: impl FnMut(RunnerJobsSeen),
) -> Result<(), Error> {
    let mut rows = sqlx::query(
        "SELECT issuer, runner_key, name_key,
                    MAX(CASE WHEN n = named THEN runner_name END),
                    MAX(CASE WHEN n = grouped THEN runner_group END),
                    MAX(CASE WHEN n = placed THEN runner_environment END),
                    MAX(CASE WHEN n = total THEN tier END),
                    MAX(CASE WHEN n = total THEN single_use ELSE 0 END),
                    MIN(seen_at), MAX(seen_at), COUNT(*), COUNT(DISTINCT repository),
                    COUNT(DISTINCT CASE WHEN single_use = 1 THEN job_id END)
             FROM (
                 SELECT numbered.*,
                        MIN(CASE WHEN runner_name IS NOT NULL THEN n END) OVER runner AS named,
                        MIN(CASE WHEN runner_group IS NOT NULL THEN n END) OVER runner AS grouped,
                        MIN(CASE WHEN runner_environment IS NOT NULL THEN n END) OVER runner AS placed,
                        COUNT(*) OVER runner AS total
                 FROM (
                     SELECT issuer, runner_key, CASE WHEN runner_key IS NULL THEN runner_name END AS name_key,
                            job_id, repository, runner_name, runner_group, runner_environment, tier,
                            single_use, seen_at,
                            ROW_NUMBER() OVER (
                                PARTITION BY issuer, runner_key, CASE WHEN runner_key IS NULL THEN runner_name END
                                ORDER BY seen_at, job_id) AS n
                     FROM runner_jobs WHERE seen_at >= $1
                 ) numbered
                 WINDOW runner AS (PARTITION BY issuer, runner_key, name_key)
             ) marked
             GROUP BY issuer, runner_key, name_key",
    )
    .bind(since)
    .fetch(&mut *connection);
    while let Some(row) = rows.try_next().await? {
        each(runner_seen(&row, reused)?);
    }
    Ok(())
}

/// Identified runners that were self-hosted, never on a single-use tier, and last seen
/// before `stale_before`, over every kept record.
async fn stale_persistent(connection: &mut AnyConnection, stale_before: i64) -> Result<i64, Error> {
    let row = sqlx::query(
        "SELECT COUNT(*) FROM (
                 SELECT MAX(single_use) AS single_use,
                        MAX(CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END) AS self_hosted,
                        MAX(seen_at) AS last_seen
                 FROM runner_jobs WHERE runner_key IS NOT NULL GROUP BY issuer, runner_key
             ) seen
             WHERE self_hosted = 1 AND single_use = 0 AND last_seen < $1",
    )
    .bind(stale_before)
    .fetch_one(&mut *connection)
    .await?;
    Ok(row.try_get(0)?)
}

pub(super) fn runner_seen(row: &AnyRow, reused: &HashSet<(String, String)>) -> Result<RunnerJobsSeen, Error> {
    let issuer: String = row.try_get(0)?;
    let runner_key: Option<String> = row.try_get(1)?;
    let marked_reused = runner_key.as_ref().is_some_and(|key| reused.contains(&(issuer.clone(), key.clone())));
    Ok(RunnerJobsSeen {
        issuer,
        runner_key,
        name_key: row.try_get(2)?,
        runner_name: row.try_get(3)?,
        runner_group: row.try_get(4)?,
        runner_environment: row.try_get(5)?,
        tier: row.try_get(6)?,
        single_use: row.try_get::<i64, _>(7)? != 0,
        first_seen: row.try_get(8)?,
        last_seen: row.try_get(9)?,
        jobs: row.try_get(10)?,
        repositories: row.try_get(11)?,
        single_use_jobs: row.try_get(12)?,
        marked_reused,
    })
}
