//! Calls to a CI's API, drawn from the issuer's budget in the store (shared by replicas), with
//! any pause the CI's rate-limit headers ask for written back there.

use std::time::Instant;

use crate::ci::{JobLocator, JobReport};
use crate::ci_api::{CiApi, Error};
use crate::clock::now_ms;
use crate::store::{self, Store};

/// Takes up to `wanted` calls of `api`'s budget, leaving `keep`: how many were granted, or the
/// error a call would have met (paused, spent).
pub(super) async fn take_ci_calls(
    store: &Store,
    api: &CiApi,
    wanted: i64,
    keep: i64,
) -> Result<Result<i64, Error>, store::Error> {
    let taken = store.take_ci_api_calls(&api.issuer, wanted, keep, i64::from(api.calls_per_minute)).await?;
    let name = api.api_name();
    Ok(match taken {
        taken if taken.paused_ms > 0 => {
            Err(Error::Paused { api: name, seconds: (taken.paused_ms as u64).div_ceil(1000) })
        }
        taken if taken.granted == 0 => Err(Error::OverBudget { api: name }),
        taken => Ok(taken.granted),
    })
}

/// Asks about one job with a call already taken; records a pause the answer asks for.
pub(super) async fn ask_ci(store: &Store, api: &CiApi, locator: &JobLocator, during: &'static str) -> Asked {
    let started = Instant::now();
    let asked = api.ask(locator).await;
    crate::metrics::ci_api_call(&api.issuer, during, answer_label(asked.report.as_ref()), started.elapsed());
    let paused = asked.pause.is_some();
    if let Some(pause) = asked.pause {
        let until = now_ms().saturating_add(i64::try_from(pause.as_millis()).unwrap_or(i64::MAX));
        if let Err(error) = store.pause_ci_api(&api.issuer, until).await {
            tracing::warn!(issuer = %api.issuer, %error, "cannot record the CI API's pause");
        }
    }
    Asked { report: asked.report, paused }
}

pub(super) struct Asked {
    pub report: Result<JobReport, Error>,
    /// The CI asked for no more calls for a while.
    pub paused: bool,
}

/// A call's answer as the metrics count it: the job's liveness, `skipped` (not sent: paused or
/// over budget) or `error`.
pub(super) fn answer_label(answer: Result<&JobReport, &Error>) -> &'static str {
    match answer {
        Ok(report) => report.liveness.as_str(),
        Err(Error::Paused { .. } | Error::OverBudget { .. }) => "skipped",
        Err(_) => "error",
    }
}
