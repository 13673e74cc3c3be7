//! Reading the fleet's figures from the maintained window: a row per runner,
//! per hour and tier, and the jobs of the window's first, partial hour. What is read grows with
//! runners and hours, not with jobs.

use std::collections::{BTreeMap, HashSet};

use futures_util::TryStreamExt;
use sqlx::{AnyConnection, Row};

use super::Hold;
use crate::fleet::aggregates::{
    DayJobs, FLEET_STATEMENT_TIMEOUT, FleetAggregates, JobTotals, RunnerJobsSeen, TierJobs, runner_seen,
};
use crate::store::{Error, Store, StoreKind};

/// How far ahead of the requested start the maintained window may be (another replica slid it a
/// moment later) and still answer for it.
const AHEAD: i64 = 60;

/// A runner's row as `runner_seen` reads it.
pub(super) const RUNNER_SEEN_COLUMNS: &str = "issuer, runner_key, name_key, runner_name, runner_group, \
     runner_environment, tier, COALESCE(single_use, 0), first_at, latest_at, jobs, repositories, single_use_jobs";

/// Whether a row of `runner_windows` is a runner the store marked reused when it claimed a
/// single-use tier's job.
pub(super) const MARKED_REUSED: &str = "EXISTS (SELECT 1 FROM runners marked
     WHERE marked.issuer = runner_windows.issuer AND marked.runner_key = runner_windows.runner_key
       AND marked.reused = 1)";

impl Store {
    /// The aggregates of the jobs seen since `since`, from the maintained window when it serves
    /// that start (slid there first), each runner's row handed to `each`; else `None`.
    pub async fn fleet_window_aggregates_each(
        &self,
        since: i64,
        stale_before: i64,
        each: &mut impl FnMut(RunnerJobsSeen),
    ) -> Result<Option<FleetAggregates>, Error> {
        let Some((mut reading, aggregates)) = self.read_fleet_window(since, stale_before).await? else {
            return Ok(None);
        };
        let reused: HashSet<(String, String)> = self.reused_runners().await?.into_iter().collect();
        let sql = format!("SELECT {RUNNER_SEEN_COLUMNS} FROM runner_windows WHERE jobs > 0");
        let mut rows = sqlx::query(&sql).fetch(&mut *reading);
        while let Some(row) = rows.try_next().await? {
            each(runner_seen(&row, &reused)?);
        }
        drop(rows);
        reading.commit().await?;
        Ok(Some(aggregates))
    }

    /// The aggregates as [`fleet_window_aggregates_each`](Self::fleet_window_aggregates_each)
    /// reads them, with the runners that miss a target counted by the store rather than read one
    /// by one: what the figures alone need.
    pub async fn fleet_window_aggregates_counted(
        &self,
        since: i64,
        stale_before: i64,
    ) -> Result<Option<(FleetAggregates, RunnerCounts)>, Error> {
        let Some((reading, aggregates, counts)) = self.read_fleet_window_counted(since, stale_before).await? else {
            return Ok(None);
        };
        reading.commit().await?;
        Ok(Some((aggregates, counts)))
    }

    /// [`read_fleet_window`](Self::read_fleet_window) with the runners that miss a target counted.
    pub(in crate::fleet) async fn read_fleet_window_counted(
        &self,
        since: i64,
        stale_before: i64,
    ) -> Result<Option<(sqlx::Transaction<'static, sqlx::Any>, FleetAggregates, RunnerCounts)>, Error> {
        let Some((mut reading, aggregates)) = self.read_fleet_window(since, stale_before).await? else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT CAST(COALESCE(SUM(CASE WHEN runner_environment = 'self-hosted' AND repositories > 1
                                      THEN 1 ELSE 0 END), 0) AS BIGINT),
                    CAST(COALESCE(SUM(CASE WHEN single_use_jobs > 1 OR {MARKED_REUSED} THEN 1 ELSE 0 END), 0) AS BIGINT)
             FROM runner_windows WHERE jobs > 0 AND runner_key IS NOT NULL"
        );
        let row = sqlx::query(&sql).fetch_one(&mut *reading).await?;
        let counts = RunnerCounts { multi_repository: row.try_get(0)?, reused: row.try_get(1)? };
        Ok(Some((reading, aggregates, counts)))
    }

    /// A read of the maintained window, slid to `since` first, with every figure but the
    /// runners': `None` when it does not serve that start.
    async fn read_fleet_window(
        &self,
        since: i64,
        stale_before: i64,
    ) -> Result<Option<(sqlx::Transaction<'static, sqlx::Any>, FleetAggregates)>, Error> {
        let maintained = self.slide_fleet_window(since).await?;
        if maintained < since || maintained > since.saturating_add(AHEAD) {
            return Ok(None);
        }
        let mut reading = self.reads().begin().await?;
        if self.kind() == StoreKind::Postgres {
            // Every figure from the same records: each statement of a read-committed
            // transaction would see the writes committed since the one before.
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ").execute(&mut *reading).await?;
            sqlx::query(&format!("SET LOCAL statement_timeout = '{FLEET_STATEMENT_TIMEOUT}'"))
                .execute(&mut *reading)
                .await?;
        }
        let since = super::since(&mut reading, self.kind(), Hold::Read).await?;
        let (totals, tiers, days) = hour_figures(&mut reading, since).await?;
        let aggregates = FleetAggregates {
            since,
            totals,
            tiers,
            days,
            runners: Vec::new(),
            stale_persistent: stale_persistent(&mut reading, stale_before).await?,
            refusals: self.runner_refusals_since(since).await?,
        };
        Ok(Some((reading, aggregates)))
    }
}

/// Identified runners in the window that miss a target the figures count, as the fleet report
/// judges them one by one (`fleet::RunnerTally`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunnerCounts {
    /// Self-hosted (as first told), and served more than one repository.
    pub multi_repository: i64,
    /// Served more than one job on a single-use tier, or marked reused when it claimed one.
    pub reused: i64,
}

/// The totals, tiers and days of the window from `since`: its whole hours from `fleet_hours`, its
/// first, partial hour from the jobs themselves.
async fn hour_figures(
    connection: &mut AnyConnection,
    since: i64,
) -> Result<(JobTotals, Vec<TierJobs>, Vec<DayJobs>), Error> {
    let first_whole_hour = since.div_euclid(3600) + i64::from(since.rem_euclid(3600) != 0);
    let mut hours = sqlx::query(
        "SELECT hour, tier, self_hosted, single_use, jobs, roles_granted FROM fleet_hours WHERE hour >= $1",
    )
    .bind(first_whole_hour)
    .fetch_all(&mut *connection)
    .await?;
    hours.extend(
        sqlx::query(
            "SELECT seen_at / 3600, COALESCE(tier, ''), CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END,
                    single_use, COUNT(*), CAST(COALESCE(SUM(roles_granted), 0) AS BIGINT)
             FROM runner_jobs WHERE seen_at >= $1 AND seen_at < $2
             GROUP BY seen_at / 3600, COALESCE(tier, ''), CASE WHEN runner_environment = 'self-hosted' THEN 1 ELSE 0 END,
                      single_use",
        )
        .bind(since)
        .bind(first_whole_hour.saturating_mul(3600))
        .fetch_all(&mut *connection)
        .await?,
    );
    let mut totals = JobTotals::default();
    let mut tiers = BTreeMap::<Option<String>, TierJobs>::new();
    let mut days = BTreeMap::<(i64, Option<String>), i64>::new();
    for row in &hours {
        let (hour, tier, self_hosted, single_use, jobs, roles_granted): (i64, String, i64, i64, i64, i64) =
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?, row.try_get(5)?);
        let tier = (!tier.is_empty()).then_some(tier);
        totals.jobs += jobs;
        totals.self_hosted += self_hosted * jobs;
        totals.self_hosted_single_use += self_hosted * single_use * jobs;
        let in_tier =
            tiers.entry(tier.clone()).or_insert_with(|| TierJobs { tier: tier.clone(), jobs: 0, roles_granted: 0 });
        in_tier.jobs += jobs;
        in_tier.roles_granted += roles_granted;
        *days.entry((hour.div_euclid(24), tier)).or_default() += jobs;
    }
    let days = days.into_iter().map(|((day, tier), jobs)| DayJobs { day, tier, jobs }).collect();
    Ok((totals, tiers.into_values().collect(), days))
}

/// Identified runners that were self-hosted, never on a single-use tier, and last seen before
/// `stale_before`, over every kept record.
async fn stale_persistent(connection: &mut AnyConnection, stale_before: i64) -> Result<i64, Error> {
    let row = sqlx::query(
        "SELECT COUNT(*) FROM runner_windows
         WHERE runner_key IS NOT NULL AND kept_self_hosted > 0 AND kept_single_use = 0 AND kept_last_seen < $1",
    )
    .bind(stale_before)
    .fetch_one(connection)
    .await?;
    Ok(row.try_get(0)?)
}
