//! Runners as identities at an exchange: a single-use tier's runner serves one job, and every
//! judged job is recorded with its runner for the fleet report.

use std::time::Duration;

use tokio::sync::mpsc;

use super::{Error, Exchange};
use crate::audit::{Event, JobIdentity};
use crate::clock::now;
use crate::job::{Job, RunnerKey};
use crate::store::{RunnerClaim, RunnerJob, RunnerRefusal, Store};

/// Judged jobs on their way to the store, written in batches by a task of their own: the fleet
/// report costs the exchange no write of its own.
#[derive(Clone)]
pub struct RunnerJobs {
    queue: mpsc::Sender<Judged>,
}

/// What the writing task records: a judged job, or a refused attempt against its runner.
enum Judged {
    Job(RunnerJob),
    Refusal(RunnerRefusal),
}

/// Records waiting beyond this are dropped (and counted): a flood must not grow memory.
const QUEUE: usize = 8192;
const BATCH: usize = 512;
/// How long the writer gathers records before a commit: the report is read by people and by a
/// scrape a minute, so a quarter second late costs nothing.
const GATHER: Duration = Duration::from_millis(250);

impl RunnerJobs {
    /// Starts the writing task; records are kept `keep_for` past when their job was seen.
    pub fn start(store: Store, keep_for: Duration) -> Self {
        let (queue, mut waiting) = mpsc::channel::<Judged>(QUEUE);
        let keep_for = keep_for.as_secs() as i64;
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            while waiting.recv_many(&mut batch, BATCH).await > 0 {
                // Gather a moment's worth: one commit for many jobs costs far less than one each.
                tokio::time::sleep(GATHER).await;
                while batch.len() < BATCH
                    && let Ok(judged) = waiting.try_recv()
                {
                    batch.push(judged);
                }
                let (mut jobs, mut refusals) = (Vec::new(), Vec::new());
                for judged in batch.drain(..) {
                    match judged {
                        Judged::Job(job) => jobs.push(job),
                        Judged::Refusal(refusal) => refusals.push(refusal),
                    }
                }
                let count = jobs.len();
                if let Err(error) = store.record_runner_jobs(jobs, keep_for).await {
                    tracing::warn!(%error, jobs = count, "cannot record judged jobs for the fleet report");
                }
                if let Err(error) = store.record_runner_refusals(&refusals, keep_for).await {
                    tracing::warn!(%error, refusals = refusals.len(), "cannot record refused attempts for the fleet report");
                }
            }
        });
        Self { queue }
    }

    fn send(&self, judged: Judged) {
        if self.queue.try_send(judged).is_err() {
            crate::metrics::runner_jobs_dropped();
        }
    }
}

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
        self.runner_jobs.send(Judged::Job(record));
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
        self.runner_jobs.send(Judged::Refusal(RunnerRefusal {
            issuer: job.issuer.clone(),
            runner_key: job.runner_key().ok(),
            reason,
            seen_at: now(),
        }));
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
    use crate::job::{CiKind, Job, NamedJob, RunnerKey};

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
            runner: crate::job::Runner { unavailable: Some("HTTP 500".into()), ..Default::default() },
            ..circleci
        };
        assert_eq!(why_untold(&unavailable), "HTTP 500");
    }
}
