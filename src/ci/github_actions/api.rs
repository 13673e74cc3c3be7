//! GitHub's jobs API: `GET /repos/{owner}/{repo}/actions/jobs/{job_id}` (API version
//! 2022-11-28), read with a GitHub App's installation token or a fixed token.

use std::time::Duration;

use http::HeaderMap;
use serde::{Deserialize, Serialize};

use super::runner::GithubRunner;
use crate::ci::JobLocator;
use crate::ci::api::{JobApi, JobReport, Liveness, check_about_job, header_number, until_epoch};
use crate::ci::{FactSource, Job, bounded_fact};
use crate::net::path_segment;

pub struct JobsApi;

/// `repository` is `owner/name`; `job_id` is the token's `check_run_id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    pub repository: String,
    pub job_id: String,
}

impl Locator {
    pub fn path(&self) -> Option<String> {
        let (owner, name) = self.repository.split_once('/')?;
        Some(format!(
            "/repos/{}/{}/actions/jobs/{}",
            path_segment(owner)?,
            path_segment(name)?,
            path_segment(&self.job_id)?
        ))
    }
}

#[derive(Deserialize)]
struct Answer {
    id: u64,
    status: String,
    #[serde(flatten)]
    runner: GithubRunner,
}

impl JobApi for JobsApi {
    fn credentials_path(&self) -> &'static str {
        super::credentials::PATH
    }

    fn read_credentials(&self, headers: &HeaderMap, body: &[u8]) -> Result<crate::ci::CredentialsReport, String> {
        super::credentials::read(headers, body)
    }

    fn name(&self) -> &'static str {
        "the GitHub API"
    }

    /// An App installation may make 5,000 requests an hour, 83 a minute.
    fn default_calls_per_minute(&self) -> u32 {
        60
    }

    fn takes_app(&self) -> bool {
        true
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("accept", "application/vnd.github+json"), ("x-github-api-version", "2022-11-28")]
    }

    fn locate(&self, job: &Job) -> Result<JobLocator, &'static str> {
        match job.repository.split_once('/') {
            Some((owner, name)) if !owner.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(JobLocator::Github(Locator { repository: job.repository.clone(), job_id: job.job_id.clone() }))
            }
            _ => Err("`repository` is not owner/name"),
        }
    }

    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String> {
        let JobLocator::Github(asked) = locator else { return Err("the job was recorded for another CI".into()) };
        let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        check_about_job(&asked.job_id, &answer.id.to_string())?;
        let liveness = match answer.status.as_str() {
            "in_progress" => Liveness::Running,
            // Any conclusion: success, failure, cancelled, skipped, timed_out …
            "completed" => Liveness::Finished,
            _ => Liveness::Unknown,
        };
        Ok(JobReport {
            liveness,
            status: bounded_fact(answer.status),
            runner: answer.runner.facts(FactSource::CiApi.as_str()),
            head: None,
        })
    }

    /// `x-ratelimit-remaining: 0` until `x-ratelimit-reset` (epoch seconds).
    fn rate_limit_pause(&self, _status: u16, headers: &HeaderMap, now: u64) -> Option<Duration> {
        (header_number(headers, "x-ratelimit-remaining") == Some(0))
            .then(|| header_number(headers, "x-ratelimit-reset").map(|reset| until_epoch(reset, now)))
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
            (200, &[("x-ratelimit-remaining", "4999"), ("x-ratelimit-reset", "1800000600")], None),
            (200, &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000600")], Some(s(600))),
            (403, &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1799999000")], Some(s(1))),
            (429, &[("retry-after", "30")], None),
        ];
        for (status, pairs, expected) in cases {
            assert_eq!(JobsApi.rate_limit_pause(*status, &headers(pairs), NOW), *expected, "{status} {pairs:?}");
        }
    }
}
