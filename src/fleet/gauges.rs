//! The fleet report's figures on `/metrics`, refreshed in the background: at start, then every
//! `lifecycle.fleet_refresh_interval` (a minute by default). A scrape reads the last values and
//! never waits on the store's aggregation, however large the fleet.
//!
//! The figures are computed by one broker at a time and kept in the store, where every other
//! broker reads them: the fleet is aggregated once per interval, not once per replica. A
//! computation that took `t` is not started again before `PACE × t` has passed, so however large
//! the fleet grows, its aggregation keeps to about a tenth of one core and never starves the
//! exchanges.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::time::MissedTickBehavior;

use super::stored_figures::StoredFigures;
use super::{STALE_AFTER, Summary, summary};
use crate::store::{Error, Store};
use crate::{clock, metrics};

/// Under this name in the store.
const FIGURES: &str = "fleet";
/// A computation waits this many times as long as the last one took.
const PACE: u32 = 10;

/// Refreshes the figures from `store` every `interval`, for as long as the broker serves.
pub async fn run(store: Store, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    // A slow aggregation delays the next one rather than bunching them up.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // A computation that failed rests as long as one that succeeded would: a query that ran
    // into its timeout is not started again at the next tick.
    let mut resting_until = Instant::now();
    loop {
        ticks.tick().await;
        if Instant::now() < resting_until {
            continue;
        }
        let started = Instant::now();
        match figures(&store, interval).await {
            Ok(Some(figures)) => figures.publish(),
            Ok(None) => {}
            Err(error) => {
                resting_until = Instant::now() + rest_after(started.elapsed());
                tracing::warn!(%error, "metrics: cannot read the fleet's records; the last figures stay");
            }
        }
    }
}

/// How long to wait before computing again after a computation that took `took`.
fn rest_after(took: Duration) -> Duration {
    took.saturating_mul(PACE)
}

/// The fleet's figures over the last 30 days as `runners report` computes them: the stored
/// ones while they are fresh or another broker is computing, else computed and stored here.
/// `None` when no broker has computed them yet.
pub async fn figures(store: &Store, interval: Duration) -> Result<Option<Figures>, Error> {
    let interval_ms = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
    let stored = store.fleet_figures(FIGURES).await?;
    if let Some(stored) = stored.as_ref().filter(|stored| fresh(stored, clock::now_ms(), interval_ms)) {
        return Ok(Figures::read(stored));
    }
    let Some(computing) = store.try_lock(FIGURES).await? else {
        return Ok(stored.as_ref().and_then(Figures::read));
    };
    // Another broker may have stored them between the read and the lock.
    if let Some(stored) =
        store.fleet_figures(FIGURES).await?.filter(|stored| fresh(stored, clock::now_ms(), interval_ms))
    {
        return Ok(Figures::read(&stored));
    }
    let (started, computed_at_ms) = (Instant::now(), clock::now_ms());
    let now = computed_at_ms / 1000;
    let figures = Figures::of(&summary(store, now - STALE_AFTER, now).await?);
    let took_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let stored = StoredFigures { computed_at_ms, took_ms, figures: figures.to_json() };
    store.put_fleet_figures(FIGURES, &stored).await?;
    computing.release().await?;
    Ok(Some(figures))
}

/// Whether `stored` is recent enough that no broker should compute again: younger than the
/// interval, or than `PACE` times what it took. A tenth of the interval is forgiven, so a
/// broker ticking on time does not skip a round for a few milliseconds; figures dated more than
/// an interval ahead (a broker whose clock ran fast) are not trusted to be fresh.
fn fresh(stored: &StoredFigures, now_ms: i64, interval_ms: i64) -> bool {
    let wait_ms = interval_ms.max(stored.took_ms.saturating_mul(i64::from(PACE)));
    let age_ms = now_ms.saturating_sub(stored.computed_at_ms);
    (-interval_ms..wait_ms.saturating_sub(interval_ms / 10)).contains(&age_ms)
}

/// What `/metrics` shows of the fleet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Each hygiene figure: name, value and whether it meets its target.
    pub hygiene: Vec<(String, Option<f64>, Option<bool>)>,
    /// Jobs per tier (`none`: in no tier).
    pub tier_jobs: Vec<(String, usize)>,
}

impl Figures {
    fn of(summary: &Summary) -> Self {
        Self {
            hygiene: summary.figures.iter().map(|f| (f.name.to_owned(), f.value, f.met)).collect(),
            tier_jobs: summary
                .tiers
                .iter()
                .map(|tier| (tier.tier.clone().unwrap_or_else(|| "none".to_owned()), tier.jobs))
                .collect(),
        }
    }

    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The stored figures; `None` (and a warning) if another build wrote what this one cannot
    /// read, so it computes them afresh at its next turn.
    fn read(stored: &StoredFigures) -> Option<Self> {
        serde_json::from_str(&stored.figures)
            .inspect_err(|error| tracing::warn!(%error, "metrics: the stored fleet figures are unreadable"))
            .ok()
    }

    fn publish(self) {
        for (name, value, met) in self.hygiene {
            metrics::runner_hygiene(name, value, met);
        }
        for (tier, jobs) in self.tier_jobs {
            metrics::runner_jobs_30d(tier, jobs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn computed(at_ms: i64, took_ms: i64) -> StoredFigures {
        StoredFigures { computed_at_ms: at_ms, took_ms, figures: String::new() }
    }

    #[test]
    fn a_failed_computation_rests_ten_times_what_it_took() {
        assert_eq!(rest_after(Duration::from_secs(90)), Duration::from_secs(900));
        assert_eq!(rest_after(Duration::from_millis(3)), Duration::from_millis(30), "a store that is down");
    }

    #[test]
    fn figures_stay_fresh_for_the_interval_or_ten_times_what_they_took() {
        let minute = 60_000;
        for (stored, now, fresh_then, why) in [
            (computed(0, 50), 30_000, true, "half an interval on"),
            (computed(0, 50), 55_000, false, "within a tenth of the interval: this tick's turn"),
            (computed(0, 50), minute, false, "an interval on"),
            (computed(0, 30_000), 4 * minute, true, "took 30 s: five minutes"),
            (computed(0, 30_000), 5 * minute, false, "took 30 s: five minutes on"),
            (computed(30_000, 50), 0, true, "stored by a broker whose clock runs a little ahead"),
            (computed(10 * minute, 50), 0, false, "stored by a broker whose clock runs far ahead"),
        ] {
            assert_eq!(fresh(&stored, now, minute), fresh_then, "{why}");
        }
    }
}
