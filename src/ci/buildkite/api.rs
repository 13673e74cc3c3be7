//! Buildkite's REST API: `GET /v2/organizations/{org}/pipelines/{pipeline}/builds/{number}/jobs/{id}`
//! for a job, `GET /v2/organizations/{org}/agents/{id}` for an agent's tags, read with a
//! `read_builds` (and `read_agents`) token.

use std::time::Duration;

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ci::JobLocator;
use crate::ci::api::{JobApi, JobReport, Liveness, check_about_job, header_number};
use crate::ci::{FactSource, Job, MAX_LABELS, RunnerFacts, bounded_fact};
use crate::net::path_segment;

pub struct RestApi;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    pub organization: String,
    pub pipeline: String,
    pub build_number: u64,
    pub job_id: String,
}

impl Locator {
    pub fn path(&self) -> Option<String> {
        Some(format!(
            "/v2/organizations/{}/pipelines/{}/builds/{}/jobs/{}",
            path_segment(&self.organization)?,
            path_segment(&self.pipeline)?,
            self.build_number,
            path_segment(&self.job_id)?
        ))
    }
}

#[derive(Deserialize)]
struct Answer {
    id: String,
    state: String,
    #[serde(default)]
    agent: Option<Agent>,
    /// The job's targeting rules, such as `queue=default`.
    #[serde(default)]
    agent_query_rules: Vec<String>,
    #[serde(default)]
    cluster_id: Option<String>,
}

#[derive(Deserialize)]
struct Agent {
    id: String,
    #[serde(default)]
    name: Option<String>,
}

/// An agent's own answer: its tags, as `NAME=VALUE`.
#[derive(Deserialize)]
struct AgentDetail {
    #[serde(default)]
    meta_data: Vec<String>,
}

impl JobApi for RestApi {
    fn credentials_path(&self) -> &'static str {
        super::credentials::PATH
    }

    fn read_credentials(&self, headers: &HeaderMap, body: &[u8]) -> Result<crate::ci::CredentialsReport, String> {
        super::credentials::read(headers, body)
    }

    fn name(&self) -> &'static str {
        "the Buildkite API"
    }

    /// Buildkite allows 200 requests a minute per organization.
    fn default_calls_per_minute(&self) -> u32 {
        100
    }

    fn locate(&self, job: &Job) -> Result<JobLocator, &'static str> {
        let claim = |name: &str| job.claims.get(name).and_then(Value::as_str).filter(|v| !v.is_empty());
        Ok(JobLocator::Buildkite(Locator {
            organization: claim("organization_slug").ok_or("no `organization_slug` claim")?.to_owned(),
            pipeline: claim("pipeline_slug").ok_or("no `pipeline_slug` claim")?.to_owned(),
            build_number: job.claims.get("build_number").and_then(Value::as_u64).ok_or("no `build_number` claim")?,
            job_id: job.job_id.clone(),
        }))
    }

    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String> {
        let JobLocator::Buildkite(asked) = locator else { return Err("the job was recorded for another CI".into()) };
        let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        check_about_job(&asked.job_id, &answer.id)?;
        let liveness = match answer.state.as_str() {
            "assigned" | "accepted" | "running" | "canceling" | "timing_out" => Liveness::Running,
            "passed" | "failed" | "canceled" | "timed_out" | "skipped" | "broken" | "expired" | "finished" => {
                Liveness::Finished
            }
            _ => Liveness::Unknown,
        };
        let queue = answer.agent_query_rules.iter().find_map(|rule| rule.strip_prefix("queue=")).map(str::to_owned);
        let group = answer.cluster_id;
        let runner = answer.agent.map(|agent| {
            RunnerFacts {
                id: Some(agent.id),
                name: agent.name,
                group,
                queue,
                source: FactSource::CiApi.as_str().to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        });
        Ok(JobReport { liveness, status: bounded_fact(answer.state), runner, head: None })
    }

    /// `RateLimit-Remaining: 0` for `RateLimit-Reset` (seconds from now).
    fn rate_limit_pause(&self, _status: u16, headers: &HeaderMap, _now: u64) -> Option<Duration> {
        (header_number(headers, "ratelimit-remaining") == Some(0))
            .then(|| header_number(headers, "ratelimit-reset").map(|seconds| Duration::from_secs(seconds.max(1))))
            .flatten()
    }

    /// A job answer names its agent but not the agent's tags.
    fn runner_labels_path(&self, locator: &JobLocator, runner_id: &str) -> Option<String> {
        let JobLocator::Buildkite(at) = locator else { return None };
        Some(format!("/v2/organizations/{}/agents/{}", path_segment(&at.organization)?, path_segment(runner_id)?))
    }

    fn read_runner_labels(&self, body: &[u8]) -> Result<Vec<String>, String> {
        let agent: AgentDetail = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        Ok(agent.meta_data.into_iter().take(MAX_LABELS).map(bounded_fact).collect())
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
            (200, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "42")], Some(s(42))),
            (200, &[("ratelimit-remaining", "150"), ("ratelimit-reset", "42")], None),
            (429, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "20")], Some(s(20))),
            (200, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "999999999")], Some(s(999_999_999))),
        ];
        for (status, pairs, expected) in cases {
            assert_eq!(RestApi.rate_limit_pause(*status, &headers(pairs), NOW), *expected, "{status} {pairs:?}");
        }
    }
}
