//! The fleet report: every runner the broker has seen, and the runner hygiene figures security
//! teams track, computed from every judged job (refused ones included). The store aggregates;
//! `report` computes the figures from the aggregates, pure; `render` writes a table, JSON, or
//! one self-contained HTML page.

use crate::store::{Error, Store};

mod cells;
mod html;
mod render;
mod report;

#[cfg(test)]
mod tests;

pub use render::{Format, render_list, render_report};
pub use report::{
    DAY, Figure, FleetReport, PAGE_RUNNERS, RunnerFilter, RunnerRow, STALE_AFTER, Summary, TierRow, build,
};

/// The report of the jobs `store` saw since `since` (unix seconds), as of `now`: the store
/// aggregates, so what is read grows with runners and days, not with jobs.
pub async fn read(store: &Store, since: i64, now: i64) -> Result<FleetReport, Error> {
    Ok(build(&store.fleet_aggregates(since, now.saturating_sub(STALE_AFTER)).await?, since, now))
}
