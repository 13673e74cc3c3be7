//! The runners a listing with a limit shows, found by the store from the maintained window: the
//! worst first (most targets missed, then the latest seen), filtered and cut to the limit, so that
//! the worst few of a large fleet are read without reading every runner.

use std::collections::HashSet;

use futures_util::TryStreamExt;
use sqlx::Row;

use super::read::{MARKED_REUSED, RUNNER_SEEN_COLUMNS, RunnerCounts};
use crate::fleet::aggregates::{FleetAggregates, RunnerJobsSeen, runner_seen};
use crate::store::{Error, Store, StoreKind};

/// Which runners are asked for, as `fleet::RunnerFilter` says, with a limit.
#[derive(Clone, Debug, Default)]
pub struct RunnersAsked {
    pub issuer: Option<String>,
    pub tier: Option<String>,
    pub self_hosted: bool,
    pub missing_target: bool,
    pub limit: usize,
}

/// The worst runners and what the figures need besides.
pub struct WorstRunners {
    pub aggregates: FleetAggregates,
    pub counts: RunnerCounts,
    /// The window's runners, shown or not.
    pub runners: i64,
}

impl Store {
    /// The aggregates of the window from `since` and the runners `asked` for, worst first, each
    /// handed to `each`, when the maintained window serves that start; else `None`. A runner is
    /// stale when last seen before `stale_before`.
    pub async fn fleet_window_worst(
        &self,
        since: i64,
        stale_before: i64,
        asked: &RunnersAsked,
        each: &mut impl FnMut(RunnerJobsSeen),
    ) -> Result<Option<WorstRunners>, Error> {
        let Some((mut reading, aggregates, counts)) = self.read_fleet_window_counted(since, stale_before).await? else {
            return Ok(None);
        };
        let runners: i64 = sqlx::query("SELECT COUNT(*) FROM runner_windows WHERE jobs > 0")
            .fetch_one(&mut *reading)
            .await?
            .try_get(0)?;
        // Text is ordered byte by byte, as the report orders ties, whatever the database's collation.
        let bytes = match self.kind() {
            StoreKind::Sqlite => "",
            StoreKind::Postgres => " COLLATE \"C\"",
        };
        let sql = format!(
            "SELECT {RUNNER_SEEN_COLUMNS}
             FROM (
                 SELECT runner_windows.*,
                        CASE WHEN runner_key IS NULL THEN 0 ELSE
                            CASE WHEN single_use_jobs > 1 OR {MARKED_REUSED} THEN 1 ELSE 0 END
                          + CASE WHEN runner_environment = 'self-hosted' AND repositories > 1 THEN 1 ELSE 0 END
                          + CASE WHEN runner_environment = 'self-hosted' AND COALESCE(single_use, 0) = 0
                                      AND latest_at < $1 THEN 1 ELSE 0 END
                          + CASE WHEN EXISTS (
                                     SELECT 1 FROM runner_refusals refused WHERE refused.issuer = runner_windows.issuer
                                       AND refused.runner_key = runner_windows.runner_key
                                       AND refused.reason IN ('replayed', 'job_ended') AND refused.day >= $2)
                                 THEN 1 ELSE 0 END
                        END AS missed
                 FROM runner_windows WHERE jobs > 0
             ) judged
             WHERE ($3 = '' OR issuer = $3) AND ($4 = '' OR tier = $4)
               AND ($5 = 0 OR runner_environment = 'self-hosted') AND ($6 = 0 OR missed > 0)
             ORDER BY missed DESC, latest_at DESC, issuer{bytes}, runner_key{bytes} NULLS FIRST,
                      name_key{bytes} NULLS FIRST
             LIMIT $7"
        );
        let reused: HashSet<(String, String)> = self.reused_runners().await?.into_iter().collect();
        let mut rows = sqlx::query(&sql)
            .bind(stale_before)
            .bind(aggregates.since.div_euclid(24 * 3600))
            .bind(asked.issuer.clone().unwrap_or_default())
            .bind(asked.tier.clone().unwrap_or_default())
            .bind(i64::from(asked.self_hosted))
            .bind(i64::from(asked.missing_target))
            .bind(i64::try_from(asked.limit).unwrap_or(i64::MAX))
            .fetch(&mut *reading);
        while let Some(row) = rows.try_next().await? {
            each(runner_seen(&row, &reused)?);
        }
        drop(rows);
        reading.commit().await?;
        Ok(Some(WorstRunners { aggregates, counts, runners }))
    }
}
