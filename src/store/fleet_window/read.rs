//! Reading the fleet's figures from the maintained window: a row per runner,
//! per hour and tier, and the jobs of the window's first, partial hour. What is read grows with
//! runners and hours, not with jobs.

use std::collections::{BTreeMap, HashSet};

use futures_util::TryStreamExt;
use sqlx::{AnyConnection, Row};

use super::Hold;
use crate::store::fleet::{FLEET_STATEMENT_TIMEOUT, runner_seen};
use crate::store::{DayJobs, Error, FleetAggregates, JobTotals, RunnerJobsSeen, Store, StoreKind, TierJobs};

/// How far ahead of the requested start the maintained window may be (another replica slid it a
/// moment later) and still answer for it.
const AHEAD: i64 = 60;

impl Store {
    /// The aggregates of the jobs seen since `since`, from the maintained window when it serves
    /// that start (slid there first), else `None`.
    pub async fn fleet_window_aggregates_each(
        &self,
        since: i64,
        stale_before: i64,
        each: &mut impl FnMut(RunnerJobsSeen),
    ) -> Result<Option<FleetAggregates>, Error> {
        let maintained = self.slide_fleet_window(since).await?;
        if maintained < since || maintained > since.saturating_add(AHEAD) {
            return Ok(None);
        }
        let mut reading = self.pool.begin().await?;
        if self.kind == StoreKind::Postgres {
            // Every figure from the same records: each statement of a read-committed
            // transaction would see the writes committed since the one before.
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ").execute(&mut *reading).await?;
            sqlx::query(&format!("SET LOCAL statement_timeout = '{FLEET_STATEMENT_TIMEOUT}'"))
                .execute(&mut *reading)
                .await?;
        }
        let since = super::since(&mut reading, self.kind, Hold::Read).await?;
        let (totals, tiers, days) = hour_figures(&mut reading, since).await?;
        let reused: HashSet<(String, String)> = self.reused_runners().await?.into_iter().collect();
        let aggregates = FleetAggregates {
            since,
            totals,
            tiers,
            days,
            runners: Vec::new(),
            stale_persistent: stale_persistent(&mut reading, stale_before).await?,
            refusals: self.runner_refusals_since(since).await?,
        };
        let mut rows = sqlx::query(
            "SELECT issuer, runner_key, name_key, runner_name, runner_group, runner_environment, tier,
                    COALESCE(single_use, 0), first_at, latest_at, jobs, repositories, single_use_jobs
             FROM runner_windows WHERE jobs > 0",
        )
        .fetch(&mut *reading);
        while let Some(row) = rows.try_next().await? {
            each(runner_seen(&row, &reused)?);
        }
        drop(rows);
        reading.commit().await?;
        Ok(Some(aggregates))
    }
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
