//! The fleet report's figures on `/metrics`, refreshed in the background: at start, then every
//! `lifecycle.fleet_refresh_interval` (a minute by default). A scrape reads the last values and
//! never waits on the store's aggregation, however large the fleet.

use std::sync::Arc;

use tokio::time::MissedTickBehavior;

use super::Broker;
use crate::{clock, fleet, metrics};

pub async fn run(broker: Arc<Broker>) {
    let mut ticks = tokio::time::interval(broker.lifecycle.fleet_refresh_interval);
    // A slow aggregation delays the next one rather than bunching them up.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        refresh(&broker).await;
    }
}

/// The fleet's figures over the last 30 days, as `runners report` computes them.
async fn refresh(broker: &Broker) {
    let now = clock::now();
    let report = match fleet::read(&broker.store, now - fleet::STALE_AFTER, now).await {
        Ok(report) => report,
        Err(error) => {
            tracing::warn!(%error, "metrics: cannot read the fleet's records; the last figures stay");
            return;
        }
    };
    for figure in &report.summary.figures {
        metrics::runner_hygiene(figure.name, figure.value, figure.met);
    }
    for tier in &report.summary.tiers {
        metrics::runner_jobs_30d(tier.tier.clone().unwrap_or_else(|| "none".to_owned()), tier.jobs);
    }
}
