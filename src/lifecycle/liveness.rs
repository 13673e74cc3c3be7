//! At an exchange: asking the CI's API whether the job still runs, before any lease is written,
//! and which runner it runs on when policy needs a fact its token lacks. One answer serves both;
//! when it is asked is the exchange's judgement's (`judgement.rs`). Running carries on; finished
//! ends the job as a completion webhook would and refuses; unknown is allowed or refused as the
//! issuer's `on_unavailable` says, once the policy has granted.

use std::sync::Arc;
use std::time::Duration;

use super::ci_calls::{answer_label, ask_ci, take_ci_calls};
use super::{EndedBy, Error, Exchange};
use crate::ci::{Job, JobLocator, Liveness};
use crate::ci_api::OnUnavailable;
use crate::clock::now_ms;
use crate::identity;
use crate::store::JobCiFacts;

/// What the check found, to be written with the job and told in the audit event.
#[derive(Default)]
pub(super) struct Checked {
    pub facts: JobCiFacts,
    /// `running` or `unknown`; `None` when the CI was not asked.
    pub liveness: Option<&'static str>,
    /// Why liveness is unknown, when `check_running` asked and the answer settled nothing.
    unknown: Option<String>,
}

impl Exchange {
    /// Asks the CI's API about the job when its issuer checks liveness, when `want_runner` (the
    /// policy needs runner facts that neither the token nor a webhook gave), or when the API
    /// tells what the job runs for (a Jenkins build's head), which it then sets. Facts found are
    /// merged into the job beneath its token's.
    pub(super) async fn check_running(&self, job: &mut Job, want_runner: bool) -> Result<Checked, Error> {
        let mut checked = Checked::default();
        let Some(api) = self.ci_apis.get(&job.issuer) else { return Ok(checked) };
        let locator = JobLocator::of(job);
        checked.facts.locator = locator.as_ref().ok().map(JobLocator::to_json);
        // What a build runs for is asked at every exchange, never taken from the cache of
        // running jobs, which keeps only their runners.
        let tells_head = api.tells_head();
        if !api.check_running && !want_runner && !tells_head {
            return Ok(checked);
        }
        let key = (job.issuer.clone(), job.job_id.clone());
        if !tells_head && let Some(runner) = self.running.get(&key).await {
            if let Some(runner) = runner {
                job.runner.merge(runner.to_runner());
            }
            checked.liveness = api.check_running.then_some(Liveness::Running.as_str());
            return Ok(checked);
        }
        let holds_jobs = locator.as_ref().is_ok_and(JobLocator::holds_jobs);
        let answer = match locator {
            Err(reason) => Err(reason.to_owned()),
            Ok(locator) => match take_ci_calls(&self.store, api, 1, 0).await? {
                Ok(_) => ask_ci(&self.store, api, &locator, "exchange").await.report.map_err(|e| e.to_string()),
                Err(skipped) => {
                    let reason = skipped.to_string();
                    let answer = answer_label(Err(&skipped));
                    crate::metrics::ci_api_call(&job.issuer, "exchange", answer, Duration::ZERO);
                    Err(reason)
                }
            },
        };
        let head = match &answer {
            Ok(report) => report.head.as_ref().map(|head| head.as_ref().map_err(String::as_str)),
            Err(reason) => tells_head.then_some(Err(reason.as_str())),
        };
        if let Some(head) = head {
            api.apply_head(job, head).map_err(|reason| Error::Identity(identity::Error::Invalid(reason)))?;
        }
        let report = match answer {
            Ok(report) => report,
            Err(reason) => {
                job.runner.unavailable = Some(format!("the CI's API did not answer: {reason}"));
                checked.unknown = api.check_running.then_some(reason);
                return Ok(checked);
            }
        };
        if let Some(runner) = &report.runner {
            job.runner.merge(runner.to_runner());
        } else {
            job.runner.unavailable =
                Some(format!("the CI's API names no runner for a job it reports as `{}`", report.status));
        }
        match report.liveness {
            Liveness::Running => {
                let runner = report.runner.map(Arc::new);
                checked.facts.asked_at_ms = now_ms();
                checked.facts.runner = runner.as_deref().and_then(|runner| serde_json::to_string(runner).ok());
                self.running.insert(key, runner).await;
                checked.liveness = api.check_running.then_some(Liveness::Running.as_str());
                Ok(checked)
            }
            Liveness::Finished => {
                tracing::warn!(
                    issuer = %job.issuer, job_id = %job.job_id, status = %report.status,
                    "the CI says this job has finished, yet it asked for credentials; ending it"
                );
                self.job_ends.end_job(&job.issuer, &job.job_id, EndedBy::ExchangeCheck, None, None).await?;
                if holds_jobs {
                    self.job_ends.end_jobs_within(&job.issuer, &job.job_id, EndedBy::ExchangeCheck).await?;
                }
                Err(Error::JobEnded)
            }
            Liveness::Unknown => {
                checked.unknown = api.check_running.then(|| format!("the CI reports the job as `{}`", report.status));
                Ok(checked)
            }
        }
    }

    /// Applies the issuer's `on_unavailable` to a check whose answer settled nothing; called once
    /// the policy has granted, so a refusal by policy is told as such.
    pub(super) fn settle_liveness(&self, job: &Job, mut checked: Checked) -> Result<Checked, Error> {
        let Some(reason) = checked.unknown.take() else { return Ok(checked) };
        let on_unavailable = self.ci_apis.get(&job.issuer).map_or(OnUnavailable::Allow, |api| api.on_unavailable);
        match on_unavailable {
            OnUnavailable::Allow => {
                tracing::warn!(issuer = %job.issuer, job_id = %job.job_id, %reason, "job liveness unknown; exchange allowed");
                crate::metrics::liveness_unknown(&job.issuer);
                checked.liveness = Some(Liveness::Unknown.as_str());
                Ok(checked)
            }
            OnUnavailable::Refuse => {
                tracing::warn!(issuer = %job.issuer, job_id = %job.job_id, %reason, "job liveness unknown; exchange refused");
                Err(Error::CiUnavailable)
            }
        }
    }
}
