//! Reconciliation: every `reconcile_interval`, asking each CI's API about the jobs whose end
//! never arrived (they hold live leases, have no recorded end, and were not asked lately). A job
//! the CI reports finished is ended by the same durable path as a webhook; such an end points to
//! a webhook that is missing or failing, so it is logged at `warn`.
//!
//! Budget: a round asks at most what the issuer's call budget holds (shared by replicas, in the
//! store; a fifth of a minute's calls kept back for exchanges when they check), at most once per
//! job, those asked longest ago first. A rate-limit pause ends the issuer's round; the jobs not
//! asked keep their place for the next.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;

use super::ci_calls::{ask_ci, take_ci_calls};
use super::{Broker, EndedBy};
use crate::ci::{JobLocator, Liveness};
use crate::ci_api::{CiApi, Error as CiApiError};
use crate::clock::now_ms;
use crate::store::{self, JobToAsk};

/// Calls of one issuer's round in flight at once: enough to cover a budget's worth of jobs well
/// within the claim, few enough not to burst at the CI.
const CONCURRENT_CALLS: usize = 8;

/// What one round did, for logs and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub asked: u64,
    pub ended: u64,
    pub unknown: u64,
    /// Claimed but given back, because the budget ran out or the CI asked for a pause.
    pub deferred: u64,
}

pub async fn run(broker: Arc<Broker>) {
    if broker.ci_apis.is_empty() {
        return;
    }
    let mut ticks = tokio::time::interval(broker.lifecycle.reconcile_interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let round = broker.reconcile().await;
        if round != Round::default() {
            tracing::info!(
                asked = round.asked,
                ended = round.ended,
                unknown = round.unknown,
                deferred = round.deferred,
                "reconcile round"
            );
        }
    }
}

impl Broker {
    /// One round over every issuer with a CI API.
    pub async fn reconcile(&self) -> Round {
        let mut total = Round::default();
        for api in self.ci_apis.iter() {
            match self.reconcile_issuer(api).await {
                Ok(round) => {
                    total.asked += round.asked;
                    total.ended += round.ended;
                    total.unknown += round.unknown;
                    total.deferred += round.deferred;
                }
                Err(error) => {
                    tracing::warn!(issuer = %api.issuer, %error, "reconcile round failed; retrying at the next")
                }
            }
        }
        total
    }

    async fn reconcile_issuer(&self, api: &CiApi) -> Result<Round, store::Error> {
        let reserve = if api.check_running { api.calls_per_minute / 5 } else { 0 };
        let per_minute = i64::from(api.calls_per_minute);
        let Ok(limit) = take_ci_calls(&self.store, api, per_minute, i64::from(reserve)).await? else {
            return Ok(Round::default());
        };
        let round_started = now_ms();
        // Half an interval of slack: rounds tick on a monotonic clock and are compared on the
        // wall clock, so a round a millisecond early must not skip a job asked a round ago.
        let slack = millis(self.lifecycle.reconcile_interval) / 2;
        let asked_before = round_started - millis(self.lifecycle.reconcile_after) + slack;
        let claim = millis(self.lifecycle.claim_timeout);
        let jobs = match self.store.claim_jobs_to_ask(&api.issuer, asked_before + 1, limit, claim).await {
            Ok(jobs) => jobs,
            Err(error) => {
                self.store.give_back_ci_api_calls(&api.issuer, limit, per_minute).await?;
                return Err(error);
            }
        };
        self.store.give_back_ci_api_calls(&api.issuer, limit - jobs.len() as i64, per_minute).await?;
        let paused = AtomicBool::new(false);
        let outcomes: Vec<Result<Outcome, store::Error>> = futures_util::stream::iter(jobs)
            .map(|job| self.ask_about(api, job, round_started, &paused))
            .buffer_unordered(CONCURRENT_CALLS)
            .collect()
            .await;
        let mut round = Round::default();
        for outcome in outcomes {
            match outcome? {
                Outcome::Running => round.asked += 1,
                Outcome::Ended => {
                    round.asked += 1;
                    round.ended += 1;
                }
                Outcome::Unknown => {
                    round.asked += 1;
                    round.unknown += 1;
                }
                Outcome::Deferred => round.deferred += 1,
            }
        }
        Ok(round)
    }

    async fn ask_about(
        &self,
        api: &CiApi,
        job: JobToAsk,
        round_started: i64,
        paused: &AtomicBool,
    ) -> Result<Outcome, store::Error> {
        let issuer = api.issuer.as_str();
        if paused.load(Ordering::Relaxed) {
            self.store.release_ask_claim(issuer, &job.job_id).await?;
            return Ok(Outcome::Deferred);
        }
        let Some(locator) = JobLocator::from_json(&job.locator) else {
            tracing::warn!(%issuer, job_id = %job.job_id, "the job's recorded CI API locator is unreadable");
            self.store.record_asked(issuer, &job.job_id, round_started, None).await?;
            return Ok(Outcome::Unknown);
        };
        let asked = ask_ci(&self.store, api, &locator, "reconcile").await;
        if asked.paused {
            paused.store(true, Ordering::Relaxed);
        }
        match asked.report {
            Ok(report) if report.liveness == Liveness::Finished => {
                tracing::warn!(
                    %issuer, job_id = %job.job_id, status = %report.status,
                    "job end found only by asking the CI: its completion webhook is missing or failing"
                );
                let runner = report.runner.and_then(|runner| serde_json::to_string(&runner).ok());
                self.store.record_asked(issuer, &job.job_id, round_started, runner.as_deref()).await?;
                let mut ended =
                    self.job_ends.end_job(issuer, &job.job_id, EndedBy::Reconcile, None, None).await.map(|_| 0);
                if ended.is_ok() && locator.holds_jobs() {
                    ended = self.job_ends.end_jobs_within(issuer, &job.job_id, EndedBy::Reconcile).await;
                }
                match ended {
                    Ok(_) => Ok(Outcome::Ended),
                    Err(super::Error::Store(error)) => Err(error),
                    Err(error) => {
                        tracing::warn!(%issuer, job_id = %job.job_id, %error, "could not end the job");
                        Ok(Outcome::Unknown)
                    }
                }
            }
            Ok(report) => {
                let runner = report.runner.and_then(|runner| serde_json::to_string(&runner).ok());
                self.store.record_asked(issuer, &job.job_id, round_started, runner.as_deref()).await?;
                Ok(if report.liveness == Liveness::Running { Outcome::Running } else { Outcome::Unknown })
            }
            Err(CiApiError::Paused { .. } | CiApiError::OverBudget { .. }) => {
                self.store.release_ask_claim(issuer, &job.job_id).await?;
                Ok(Outcome::Deferred)
            }
            Err(error) => {
                tracing::info!(%issuer, job_id = %job.job_id, %error, "job liveness unknown; asking again next round");
                self.store.record_asked(issuer, &job.job_id, round_started, None).await?;
                Ok(Outcome::Unknown)
            }
        }
    }
}

enum Outcome {
    Running,
    Ended,
    Unknown,
    Deferred,
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}
