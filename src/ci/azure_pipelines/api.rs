//! The Azure DevOps build API: `GET {organization URL}/{project}/_apis/build/builds/{run}`, then the
//! run's timeline (`…/builds/{run}/timeline`): for a job within the run, its record says whether
//! that attempt of the job runs and names its agent; for the run, its job records say whether the
//! run's pool is every job's. Read with a personal access token (HTTP Basic, no user). Rate limits
//! delay, then answer 429 with `Retry-After` and `X-RateLimit-*` headers.

use std::time::Duration;

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ci::JobLocator;
use crate::ci::api::{JobApi, JobReport, Liveness, TokenHeader, check_about_job, header_number, until_epoch};
use crate::ci::{FactSource, Job, NamedJob, RunnerFacts, bounded_fact};
use crate::net::path_segment;

pub struct BuildsApi;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    /// The project's id (`prj_id`).
    pub project: String,
    pub run_id: u64,
    /// The job within the run its credentials are bound to, when the exchange named one; absent
    /// from what brokers that bound only runs stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<NamedJob>,
}

impl Locator {
    pub fn path(&self) -> Option<String> {
        Some(format!("/{}/_apis/build/builds/{}?api-version=7.1", path_segment(&self.project)?, self.run_id))
    }

    /// The run's timeline: a named job's record, or every job's queue for the run's.
    pub fn timeline_path(&self) -> Option<String> {
        Some(format!("/{}/_apis/build/builds/{}/timeline?api-version=7.1", path_segment(&self.project)?, self.run_id))
    }
}

#[derive(Deserialize)]
struct Answer {
    id: u64,
    status: String,
    #[serde(default)]
    project: Option<Project>,
    #[serde(default)]
    queue: Option<Queue>,
}

#[derive(Deserialize)]
struct Project {
    id: String,
}

/// vsts-rest-api-specs `build/7.1/build.json`, `Build.queue`: "This is only set if the definition type
/// is Build. WARNING: this field is deprecated and does not corresponds to the jobs queues." It is
/// the run's default queue; a job's own is its timeline record's `queueId`.
#[derive(Deserialize)]
struct Queue {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    pool: Option<Pool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pool {
    name: String,
    #[serde(default)]
    is_hosted: bool,
}

/// A run's timeline: a record per stage, phase, job and task. Nulls are explicit; missing and null
/// are read alike.
#[derive(Deserialize)]
struct Timeline {
    records: Vec<Record>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    id: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    attempt: Option<u32>,
    #[serde(default)]
    worker_name: Option<String>,
    /// `TimelineRecord.queueId`: "The queue ID of the queue that the operation ran on" (the same
    /// spec). Absent for a job no agent queue runs (an agentless job) or not yet queued.
    #[serde(default)]
    queue_id: Option<u64>,
}

impl JobApi for BuildsApi {
    fn credentials_path(&self) -> &'static str {
        super::credentials::PATH
    }

    fn read_credentials(&self, headers: &HeaderMap, body: &[u8]) -> Result<crate::ci::CredentialsReport, String> {
        super::credentials::read(headers, body)
    }

    fn name(&self) -> &'static str {
        "the Azure DevOps API"
    }

    /// Azure DevOps meters usage per user over five minutes; a build read is cheap.
    fn default_calls_per_minute(&self) -> u32 {
        120
    }

    fn token_header(&self) -> TokenHeader {
        TokenHeader::BasicPassword
    }

    fn locate(&self, job: &Job) -> Result<JobLocator, &'static str> {
        let project = job.claims.get("prj_id").and_then(Value::as_str).ok_or("no `prj_id` claim")?;
        let run_id = job.run_id.as_deref().and_then(|run| run.parse().ok()).ok_or("no `run_id` claim")?;
        Ok(JobLocator::AzurePipelines(Locator { project: project.to_owned(), run_id, job: job.named_job.clone() }))
    }

    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String> {
        let asked = asked(locator)?;
        let answer = read_build(asked, body)?;
        // The build's pool is the run's default, not known to be any job's without the timeline.
        Ok(JobReport {
            liveness: run_liveness(&answer.status),
            status: bounded_fact(answer.status),
            runner: None,
            head: None,
        })
    }

    /// A run's build alone, when its timeline could not be had (over 1 MiB, an error): whether
    /// the run goes on, its pool unknown. A named job is unknown without its record.
    fn read_without_inner(
        &self,
        locator: &JobLocator,
        build: &[u8],
        reason: &str,
    ) -> Option<Result<JobReport, String>> {
        let asked = asked(locator).ok()?;
        if asked.job.is_some() {
            return None;
        }
        Some(read_build(asked, build).map(|answer| JobReport {
            liveness: run_liveness(&answer.status),
            status: bounded_fact(format!("{}; the run's timeline could not be read: {reason}", answer.status)),
            runner: None,
            head: None,
        }))
    }

    fn inner_path(&self, locator: &JobLocator) -> Option<String> {
        asked(locator).ok()?.timeline_path()
    }

    /// A named job runs while its attempt's record is `inProgress`; it has finished once that
    /// record is `completed`, a later attempt has replaced it, or the run is completed. A record
    /// that is `pending` or absent settles nothing. The agent is the record's `workerName`; the
    /// run's pool is the job's only where the record's queue is the run's.
    fn read_answers(&self, locator: &JobLocator, build: &[u8], timeline: &[u8]) -> Result<JobReport, String> {
        let asked = asked(locator)?;
        let answer = read_build(asked, build)?;
        let run = run_liveness(&answer.status);
        let timeline: Timeline = serde_json::from_slice(timeline).map_err(|e| format!("the timeline: {e}"))?;
        let Some(job) = asked.job.as_ref() else { return Ok(run_report(answer, run, &timeline)) };
        let record = timeline
            .records
            .into_iter()
            .find(|record| record.kind.as_deref() == Some("Job") && record.id.eq_ignore_ascii_case(&job.id));
        let Some(record) = record else {
            let liveness = if run == Liveness::Finished { Liveness::Finished } else { Liveness::Unknown };
            return Ok(JobReport { liveness, status: "not in the run's timeline".into(), runner: None, head: None });
        };
        let state = record.state.as_deref().unwrap_or("none");
        let (liveness, status) = match record.attempt {
            _ if run == Liveness::Finished => (Liveness::Finished, answer.status.clone()),
            // A run being cancelled is no job's to carry on in, whatever its records say yet.
            _ if answer.status == "cancelling" => (Liveness::Unknown, answer.status.clone()),
            Some(attempt) if attempt > job.attempt => (Liveness::Finished, format!("replaced by attempt {attempt}")),
            Some(attempt) if attempt == job.attempt => {
                let liveness = match state {
                    "inProgress" => Liveness::Running,
                    "completed" => Liveness::Finished,
                    _ => Liveness::Unknown,
                };
                (liveness, state.to_owned())
            }
            _ => (Liveness::Unknown, "the attempt is not in the run's timeline".to_owned()),
        };
        let same_queue =
            record.queue_id.is_some() && answer.queue.as_ref().and_then(|queue| queue.id) == record.queue_id;
        let pool = answer.queue.and_then(|queue| queue.pool).filter(|_| same_queue).map(pool_facts);
        let runner = RunnerFacts {
            name: record.worker_name.filter(|name| !name.is_empty()),
            source: FactSource::CiApi.as_str().to_owned(),
            ..pool.unwrap_or_default()
        }
        .bounded();
        let runner = (runner.name.is_some() || runner.group.is_some()).then_some(runner);
        Ok(JobReport { liveness, status: bounded_fact(status), runner, head: None })
    }

    /// `X-RateLimit-Remaining: 0` until `X-RateLimit-Reset` (epoch seconds).
    fn rate_limit_pause(&self, _status: u16, headers: &HeaderMap, now: u64) -> Option<Duration> {
        (header_number(headers, "x-ratelimit-remaining") == Some(0))
            .then(|| header_number(headers, "x-ratelimit-reset").map(|reset| until_epoch(reset, now)))
            .flatten()
    }
}

fn asked(locator: &JobLocator) -> Result<&Locator, String> {
    match locator {
        JobLocator::AzurePipelines(asked) => Ok(asked),
        _ => Err("the job was recorded for another CI".into()),
    }
}

/// The build answer, if it is about the run and project asked about.
fn read_build(asked: &Locator, body: &[u8]) -> Result<Answer, String> {
    let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    check_about_job(&asked.run_id.to_string(), &answer.id.to_string())?;
    if let Some(project) = &answer.project {
        check_about_job(&asked.project, &project.id)?;
    }
    Ok(answer)
}

/// A run is stopping while `cancelling` (BuildStatus: "The build is cancelling"): like
/// `notStarted` and `postponed`, it settles nothing, and an exchange gets nothing.
fn run_liveness(status: &str) -> Liveness {
    match status {
        "inProgress" => Liveness::Running,
        "completed" => Liveness::Finished,
        _ => Liveness::Unknown,
    }
}

/// The pool as the run's (or a job's) runner: its name the group, its hosted-ness both the
/// `runner_type` rules already pin and the `runner_environment` every CI's runners share, in the
/// words GitHub's and GitLab's claims use (`…-hosted`, `self-hosted`).
fn pool_facts(pool: Pool) -> RunnerFacts {
    RunnerFacts {
        group: Some(pool.name),
        runner_type: Some(if pool.is_hosted { "hosted" } else { "self-hosted" }.to_owned()),
        environment: Some(if pool.is_hosted { "microsoft-hosted" } else { "self-hosted" }.to_owned()),
        source: FactSource::CiApi.as_str().to_owned(),
        ..RunnerFacts::default()
    }
    .bounded()
}

/// A run asked about as a whole: its pool (the build's `queue.pool`, the run's default) is its
/// jobs' only when every job record of its timeline is on the run's queue. Otherwise a job may run
/// on another pool (a self-hosted one), and the pool is unknown: a rule needing it cannot match.
fn run_report(answer: Answer, liveness: Liveness, timeline: &Timeline) -> JobReport {
    let run_queue = answer.queue.as_ref().and_then(|queue| queue.id);
    let mut jobs = timeline.records.iter().filter(|record| record.kind.as_deref() == Some("Job")).peekable();
    let elsewhere = match (run_queue, jobs.peek()) {
        (None, _) => Some("the build answer names no queue".to_owned()),
        (_, None) => Some("its timeline shows no job".to_owned()),
        (Some(run_queue), Some(_)) => jobs.find(|record| record.queue_id != Some(run_queue)).map(|record| {
            let queue = record.queue_id.map_or_else(|| "no queue".to_owned(), |queue| format!("queue {queue}"));
            format!("job {} is on {queue}, not the run's queue {run_queue}", record.id)
        }),
    };
    let (status, runner) = match elsewhere {
        None => (answer.status, answer.queue.and_then(|queue| queue.pool).map(pool_facts)),
        Some(why) => (format!("{} (its pool is not known to be every job's: {why})", answer.status), None),
    };
    JobReport { liveness, status: bounded_fact(status), runner, head: None }
}
