//! Runners as identities at an exchange: a single-use tier's runner serves one job, and every
//! judged job is handed with its runner to the fleet's recorder (`fleet::RunnerJobs`).

use super::{Error, Exchange};
use crate::audit::{Event, JobIdentity};
use crate::ci::{Job, RunnerKey};
use crate::clock::now;
use crate::fleet::{RunnerJob, RunnerRefusal};
use crate::store::RunnerClaim;

impl Exchange {
    /// Refuses a single-use tier's job on a runner that already served another job, or whose
    /// runner cannot be told from others. Any other job passes untouched.
    pub(super) async fn claim_single_use(&self, job: &Job) -> Result<(), Error> {
        let Some(tier) = self.policy.tier(job).filter(|tier| tier.single_use) else { return Ok(()) };
        let key = job.runner_key().map_err(|fact| Error::RunnerUnknown {
            tier: tier.name.to_owned(),
            fact,
            why: why_untold(job),
        })?;
        let keep_until = now().saturating_add(self.lifecycle.runner_retention.as_secs() as i64);
        match self.store.claim_runner(&job.issuer, &key, &job.job_id, keep_until).await? {
            RunnerClaim::FirstJob => Ok(()),
            RunnerClaim::Reused { first_job_id } => {
                tracing::warn!(
                    issuer = %job.issuer, job_id = %job.job_id, runner = %key, %first_job_id, tier = tier.name,
                    "a single-use runner served another job; refused"
                );
                crate::metrics::runner_reused(&job.issuer, tier.name);
                self.audit.record(&Event::RunnerReused {
                    job: JobIdentity::from(job),
                    runner_key: &key,
                    first_job_id: &first_job_id,
                    tier: tier.name,
                });
                Err(Error::RunnerReused { runner: key, tier: tier.name.to_owned() })
            }
        }
    }

    /// Records a judged job with its runner, for `runners list` and `runners report`.
    pub(super) fn record_runner_job(&self, job: &Job, roles_granted: usize, refused: bool) {
        let tier = self.policy.tier(job);
        let record = RunnerJob {
            issuer: job.issuer.clone(),
            job_id: job.job_id.clone(),
            repository: job.repository.clone(),
            runner_key: job.runner_key().ok(),
            runner_name: job.runner.name.as_ref().map(|name| name.value.clone()),
            runner_group: job.runner.group.as_ref().or(job.runner.queue.as_ref()).map(|group| group.value.clone()),
            // The pool's hosted-ness where the token does not say, so that Azure's self-hosted
            // agents count as self-hosted in the fleet report.
            runner_environment: job.effective_runner_environment().map(|environment| environment.value.to_owned()),
            tier: tier.map(|tier| tier.name.to_owned()),
            single_use: tier.is_some_and(|tier| tier.single_use),
            roles_granted: roles_granted as i64,
            refused,
            seen_at: now(),
        };
        self.runner_jobs.record_job(record);
    }

    /// Counts a refused exchange against the job's runner as far as it is known, when the
    /// refusal is one the fleet report tracks.
    pub(super) fn record_refusal(&self, job: &Job, error: &Error) {
        let reason = match error {
            Error::Replayed => "replayed",
            Error::JobEnded => "job_ended",
            Error::CiUnavailable => "ci_unavailable",
            Error::RunnerReused { .. } => "runner_reused",
            Error::RunnerUnknown { .. } => "runner_unknown",
            Error::ExchangeCapReached { .. } => "exchange_cap",
            Error::Denied(_) => "policy",
            _ => return,
        };
        crate::metrics::runner_refusal(reason);
        self.runner_jobs.record_refusal(RunnerRefusal {
            issuer: job.issuer.clone(),
            runner_key: job.runner_key().ok(),
            reason,
            seen_at: now(),
        });
    }
}

const UNTOLD: &str = "neither the token, the CI's API nor a webhook told it";

/// Why a job's runner key could not be had, in the words that help its author: where the key's
/// fact can never be told for this job, say so rather than blame the sources.
fn why_untold(job: &Job) -> String {
    if let Some(why) = &job.runner.unavailable {
        return why.clone();
    }
    let ci = job.kind.map(|kind| kind.ci());
    match ci {
        Some(ci) if job.runner_key_by == RunnerKey::Unknown => {
            format!("{} tells no fact that names a runner host", ci.title)
        }
        Some(ci) if ci.job_in_run.is_some() && job.named_job.is_none() => {
            format!("the exchange named no job within the run, and {} names an agent only for a job", ci.title)
        }
        _ => UNTOLD.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{UNTOLD, why_untold};
    use crate::ci::CiKind;
    use crate::ci::{Job, NamedJob, RunnerKey};

    #[test]
    fn an_unknown_runner_key_is_explained_by_what_could_never_tell_it() {
        let job = |kind: CiKind, key: RunnerKey| Job { kind: Some(kind), runner_key_by: key, ..Job::default() };
        let circleci = job(CiKind::Circleci, RunnerKey::Unknown);
        assert_eq!(why_untold(&circleci), "CircleCI tells no fact that names a runner host");
        let run = job(CiKind::AzurePipelines, RunnerKey::GroupAndName);
        assert_eq!(
            why_untold(&run),
            "the exchange named no job within the run, and Azure Pipelines names an agent only for a job"
        );
        let named = Job { named_job: Some(NamedJob::new("e87e3d16-29b0-5003-7d86-82b704b96244", 1).unwrap()), ..run };
        assert_eq!(why_untold(&named), UNTOLD);
        let github = job(CiKind::Github, RunnerKey::IdAndName);
        assert_eq!(why_untold(&github), UNTOLD);
        let unavailable = Job {
            runner: crate::ci::Runner { unavailable: Some("HTTP 500".into()), ..Default::default() },
            ..circleci
        };
        assert_eq!(why_untold(&unavailable), "HTTP 500");
    }
}
