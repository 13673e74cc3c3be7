//! At an exchange: asking the CI's API whether the job still runs, before any lease is written.
//! Running carries on; finished ends the job as a completion webhook would and refuses; unknown
//! is allowed or refused as the issuer's `on_unavailable` says.

use std::time::Duration;

use super::{Broker, EndedBy, Error};
use crate::ci_api::{JobLocator, Liveness, OnUnavailable};
use crate::job::Job;
use crate::store::{JobCiFacts, now_ms};

/// What the check found, to be written with the job and told in the audit event.
#[derive(Default)]
pub(super) struct Checked {
    pub facts: JobCiFacts,
    /// `running` or `unknown`; `None` when the CI was not asked.
    pub liveness: Option<&'static str>,
}

impl Broker {
    pub(super) async fn check_running(&self, job: &Job) -> Result<Checked, Error> {
        let Some(api) = self.ci_apis.get(&job.issuer) else { return Ok(Checked::default()) };
        let locator = JobLocator::of(job);
        let mut checked = Checked {
            facts: JobCiFacts { locator: locator.as_ref().ok().map(JobLocator::to_json), ..JobCiFacts::default() },
            liveness: None,
        };
        if !api.check_running {
            return Ok(checked);
        }
        let key = (job.issuer.clone(), job.job_id.clone());
        if self.running.contains_key(&key) {
            checked.liveness = Some(Liveness::Running.as_str());
            return Ok(checked);
        }
        let locator = match locator {
            Ok(locator) => locator,
            Err(reason) => return self.liveness_unknown(api.on_unavailable, job, reason, checked),
        };
        let answer = match self.take_ci_calls(api, 1, 0).await? {
            Ok(_) => self.ask_ci(api, &locator, "exchange").await.report,
            Err(skipped) => {
                let skipped = Err(skipped);
                crate::metrics::ci_api_call(&job.issuer, "exchange", &skipped, Duration::ZERO);
                skipped
            }
        };
        let report = match answer {
            Ok(report) => report,
            Err(error) => return self.liveness_unknown(api.on_unavailable, job, &error.to_string(), checked),
        };
        match report.liveness {
            Liveness::Running => {
                self.running.insert(key, ()).await;
                checked.facts.asked_at_ms = now_ms();
                checked.facts.runner = report.runner.and_then(|runner| serde_json::to_string(&runner).ok());
                checked.liveness = Some(Liveness::Running.as_str());
                Ok(checked)
            }
            Liveness::Finished => {
                tracing::warn!(
                    issuer = %job.issuer, job_id = %job.job_id, status = %report.status,
                    "the CI says this job has finished, yet it asked for credentials; ending it"
                );
                self.end_job(&job.issuer, &job.job_id, EndedBy::ExchangeCheck, None, None).await?;
                Err(Error::JobEnded)
            }
            Liveness::Unknown => {
                let reason = format!("the CI reports the job as `{}`", report.status);
                self.liveness_unknown(api.on_unavailable, job, &reason, checked)
            }
        }
    }

    fn liveness_unknown(
        &self,
        on_unavailable: OnUnavailable,
        job: &Job,
        reason: &str,
        mut checked: Checked,
    ) -> Result<Checked, Error> {
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
