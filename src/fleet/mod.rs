//! The fleet: every runner the broker has seen, and the runner hygiene figures security teams
//! track, computed from every judged job (refused ones included). What records, keeps, refreshes
//! and reports it lives here:
//! - `recorder` queues what each exchange judged, and `records` writes it to the store, counting
//!   it in the maintained window (`window/`) in the same transaction; `refusals` counts the
//!   refused attempts per runner, reason and day;
//! - `aggregates` and `window/` read the figures back, by `GROUP BY` or from the window;
//! - `report` computes the figures from the aggregates, pure; `render` writes a table, JSON, or
//!   one self-contained HTML page (`html`), each runner's cells from `as_text`;
//! - `gauges` refreshes the figures on `/metrics` in the background, kept for every replica in
//!   the store (`stored_figures`).
//!
//! The fleet's SQL runs on the store's pool and writer (`Store::reads`, `Store::writer`): its
//! queries are `impl Store` blocks here, beside the fleet, so the store keeps only its engine and
//! the tables others share.

use crate::store::{Error, Store};

mod aggregates;
mod as_text;
pub mod gauges;
mod html;
mod judged_job;
mod recorder;
mod records;
mod refusals;
mod render;
mod report;
mod stored_figures;
mod window;

#[cfg(test)]
mod tests;

pub use aggregates::{DayJobs, FleetAggregates, JobTotals, RunnerJobsSeen, TierJobs};
pub use judged_job::RunnerJob;
pub use recorder::RunnerJobs;
pub use records::RunnerLastSeen;
pub use refusals::{RefusalCount, RunnerRefusal};
pub use render::{Format, render_list, render_report, write_list, write_report};
pub use report::{
    DAY, Figure, FleetReport, RunnerFilter, RunnerRow, RunnerTally, SHOWN_RUNNERS, STALE_AFTER, Summary, TierRow,
    build, summarize,
};
use report::{Refusals, Shown, runner_row};
pub use stored_figures::StoredFigures;
pub use window::{RunnerCounts, RunnersAsked, WorstRunners};

/// Where the aggregates are read from: the maintained window when it serves the start asked, else
/// every judged job.
impl Store {
    /// The aggregates of the jobs seen since `since` (unix seconds); staleness is judged on every
    /// kept record against `stale_before`.
    pub async fn fleet_aggregates(&self, since: i64, stale_before: i64) -> Result<FleetAggregates, Error> {
        let mut runners = Vec::new();
        let mut aggregates = self.fleet_aggregates_each(since, stale_before, |runner| runners.push(runner)).await?;
        aggregates.runners = runners;
        Ok(aggregates)
    }

    /// The aggregates as [`fleet_aggregates`](Self::fleet_aggregates) reads them, each runner's
    /// row handed to `each` as it streams in and left out of the answer: what a caller that
    /// only tallies runners (the `/metrics` refresh) holds stays the same size however many
    /// runners there are. Read from the maintained window (`window/`) when it serves
    /// `since`, as it does for the last [`FLEET_WINDOW`](window::FLEET_WINDOW) or
    /// any earlier start not yet passed; else from every judged job of the window.
    pub async fn fleet_aggregates_each(
        &self,
        since: i64,
        stale_before: i64,
        mut each: impl FnMut(RunnerJobsSeen),
    ) -> Result<FleetAggregates, Error> {
        match self.fleet_window_aggregates_each(since, stale_before, &mut each).await? {
            Some(aggregates) => Ok(aggregates),
            None => self.fleet_aggregates_from_jobs(since, stale_before, each).await,
        }
    }
}

/// The report of the jobs `store` saw since `since` (unix seconds), as of `now`, with the runners
/// `filter` keeps: the store aggregates, and each runner is judged as it streams in, so what is
/// held grows with the runners shown (at most the filter's limit), not with jobs or the fleet.
pub async fn read(store: &Store, since: i64, now: i64, filter: &RunnerFilter) -> Result<FleetReport, Error> {
    let refusals = Refusals::of(&store.runner_refusals_since(since).await?);
    let stale_before = now.saturating_sub(STALE_AFTER);
    let mut shown = Shown::new(filter);
    // With a limit, the store finds the worst from the maintained window: a few rows read.
    if let Some(limit) = filter.limit {
        let asked = RunnersAsked {
            issuer: filter.issuer.clone(),
            tier: filter.tier.clone(),
            self_hosted: filter.self_hosted,
            missing_target: filter.missing_target,
            limit,
        };
        let mut offer = |runner| shown.offer(runner_row(&runner, &refusals, now));
        if let Some(worst) = store.fleet_window_worst(since, stale_before, &asked, &mut offer).await? {
            let (runners, _) = shown.finish();
            let runners_not_shown = usize::try_from(worst.runners).unwrap_or(0).saturating_sub(runners.len());
            let summary =
                summarize(&worst.aggregates, &RunnerTally::counted(worst.counts), worst.aggregates.since, now);
            return Ok(FleetReport { summary, runners, runners_not_shown });
        }
    }
    let mut tally = RunnerTally::default();
    let aggregates = store
        .fleet_aggregates_each(since, stale_before, |runner| {
            tally.add(&runner);
            shown.offer(runner_row(&runner, &refusals, now));
        })
        .await?;
    let (runners, runners_not_shown) = shown.finish();
    Ok(FleetReport { summary: summarize(&aggregates, &tally, aggregates.since, now), runners, runners_not_shown })
}

/// The report's summary alone (figures, tiers, days), each runner tallied as it streams from
/// the store and then dropped: what the `/metrics` refresh holds does not grow with the fleet.
/// From the maintained window, the store counts the runners that miss a target instead.
pub async fn summary(store: &Store, since: i64, now: i64) -> Result<Summary, Error> {
    let stale_before = now.saturating_sub(STALE_AFTER);
    if let Some((aggregates, counts)) = store.fleet_window_aggregates_counted(since, stale_before).await? {
        return Ok(summarize(&aggregates, &RunnerTally::counted(counts), aggregates.since, now));
    }
    let mut tally = RunnerTally::default();
    let aggregates = store.fleet_aggregates_from_jobs(since, stale_before, |runner| tally.add(&runner)).await?;
    Ok(summarize(&aggregates, &tally, aggregates.since, now))
}
