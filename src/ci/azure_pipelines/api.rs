//! The Azure DevOps build API: `GET {organization URL}/{project}/_apis/build/builds/{run}` for a run,
//! read with a personal access token (HTTP Basic, no user). Rate limits delay, then answer 429
//! with `Retry-After` and `X-RateLimit-*` headers.

use std::time::Duration;

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ci::JobLocator;
use crate::ci::api::{JobApi, JobReport, Liveness, TokenHeader, check_about_job, header_number, until_epoch};
use crate::job::{FactSource, Job, RunnerFacts, bounded_fact};
use crate::net::path_segment;

pub struct BuildsApi;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    /// The project's id (`prj_id`).
    pub project: String,
    pub run_id: u64,
}

impl Locator {
    pub fn path(&self) -> Option<String> {
        Some(format!("/{}/_apis/build/builds/{}?api-version=7.1", path_segment(&self.project)?, self.run_id))
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

#[derive(Deserialize)]
struct Queue {
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

impl JobApi for BuildsApi {
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
        Ok(JobLocator::AzurePipelines(Locator { project: project.to_owned(), run_id }))
    }

    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String> {
        let JobLocator::AzurePipelines(asked) = locator else {
            return Err("the job was recorded for another CI".into());
        };
        let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        check_about_job(&asked.run_id.to_string(), &answer.id.to_string())?;
        if let Some(project) = &answer.project {
            check_about_job(&asked.project, &project.id)?;
        }
        let liveness = match answer.status.as_str() {
            "inProgress" | "cancelling" => Liveness::Running,
            "completed" => Liveness::Finished,
            _ => Liveness::Unknown,
        };
        let runner = answer.queue.and_then(|queue| queue.pool).map(|pool| {
            RunnerFacts {
                group: Some(pool.name),
                runner_type: Some(if pool.is_hosted { "hosted" } else { "self-hosted" }.to_owned()),
                source: FactSource::CiApi.as_str().to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        });
        Ok(JobReport { liveness, status: bounded_fact(answer.status), runner })
    }

    /// `X-RateLimit-Remaining: 0` until `X-RateLimit-Reset` (epoch seconds).
    fn rate_limit_pause(&self, _status: u16, headers: &HeaderMap, now: u64) -> Option<Duration> {
        (header_number(headers, "x-ratelimit-remaining") == Some(0))
            .then(|| header_number(headers, "x-ratelimit-reset").map(|reset| until_epoch(reset, now)))
            .flatten()
    }
}
