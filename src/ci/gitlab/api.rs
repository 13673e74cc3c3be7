//! GitLab's jobs API: `GET /projects/:id/jobs/:job_id`, read with a `read_api` token sent as
//! `PRIVATE-TOKEN`.

use std::time::Duration;

use http::HeaderMap;
use serde::{Deserialize, Serialize};

use super::webhook::FINAL_STATUSES;
use crate::ci::JobLocator;
use crate::ci::api::{JobApi, JobReport, Liveness, TokenHeader, check_about_job, header_number, until_epoch};
use crate::ci::{FactSource, Job, RunnerFacts, bounded_fact};
use crate::net::path_segment;

pub struct JobsApi;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    pub project_id: String,
    pub job_id: String,
}

impl Locator {
    pub fn path(&self) -> Option<String> {
        Some(format!("/projects/{}/jobs/{}", path_segment(&self.project_id)?, path_segment(&self.job_id)?))
    }
}

#[derive(Deserialize)]
struct Answer {
    id: u64,
    status: String,
    #[serde(default)]
    runner: Option<AnswerRunner>,
    #[serde(default)]
    tag_list: Vec<String>,
    #[serde(default)]
    runner_manager: Option<RunnerManager>,
}

/// The host that ran the job, one of the many a runner configuration may have.
#[derive(Deserialize)]
struct RunnerManager {
    system_id: String,
}

#[derive(Deserialize)]
struct AnswerRunner {
    id: u64,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    runner_type: Option<String>,
}

impl JobApi for JobsApi {
    fn credentials_path(&self) -> &'static str {
        super::credentials::PATH
    }

    fn read_credentials(&self, headers: &HeaderMap, body: &[u8]) -> Result<crate::ci::CredentialsReport, String> {
        super::credentials::read(headers, body)
    }

    fn name(&self) -> &'static str {
        "the GitLab API"
    }

    /// GitLab.com allows 2,000 requests a minute per user.
    fn default_calls_per_minute(&self) -> u32 {
        600
    }

    fn token_header(&self) -> TokenHeader {
        TokenHeader::Named("PRIVATE-TOKEN")
    }

    fn locate(&self, job: &Job) -> Result<JobLocator, &'static str> {
        let project_id = job.repository_id.clone().ok_or("no `job_project_id` claim")?;
        Ok(JobLocator::Gitlab(Locator { project_id, job_id: job.job_id.clone() }))
    }

    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String> {
        let JobLocator::Gitlab(asked) = locator else { return Err("the job was recorded for another CI".into()) };
        let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        check_about_job(&asked.job_id, &answer.id.to_string())?;
        let liveness = match answer.status.as_str() {
            "running" => Liveness::Running,
            status if FINAL_STATUSES.contains(&status) => Liveness::Finished,
            _ => Liveness::Unknown,
        };
        let (tags, manager) = (answer.tag_list, answer.runner_manager.map(|m| m.system_id));
        let runner = answer.runner.map(|runner| {
            RunnerFacts {
                id: Some(runner.id.to_string()),
                name: runner.description,
                labels: tags,
                runner_type: runner.runner_type,
                manager,
                source: FactSource::CiApi.as_str().to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        });
        Ok(JobReport { liveness, status: bounded_fact(answer.status), runner, head: None })
    }

    /// `RateLimit-Reset` (epoch seconds) on a 429 or with nothing remaining.
    fn rate_limit_pause(&self, status: u16, headers: &HeaderMap, now: u64) -> Option<Duration> {
        (status == 429 || header_number(headers, "ratelimit-remaining") == Some(0))
            .then(|| header_number(headers, "ratelimit-reset").map(|reset| until_epoch(reset, now)))
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ci::api::headers;

    #[test]
    fn the_rate_limit_headers_give_the_documented_pause() {
        const NOW: u64 = 1_800_000_000;
        let s = Duration::from_secs;
        type Case<'a> = (u16, &'a [(&'static str, &'a str)], Option<Duration>);
        let cases: &[Case] = &[
            (200, &[("ratelimit-remaining", "1999"), ("ratelimit-reset", "1800000060")], None),
            (429, &[("ratelimit-reset", "1800000045")], Some(s(45))),
            (200, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "1800000010")], Some(s(10))),
            (500, &[("ratelimit-reset", "garbage")], None),
        ];
        for (status, pairs, expected) in cases {
            assert_eq!(JobsApi.rate_limit_pause(*status, &headers(pairs), NOW), *expected, "{status} {pairs:?}");
        }
    }
}
