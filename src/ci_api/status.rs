//! What a CI's job answer says: whether the job runs, has finished, or is in a state that
//! settles neither (queued, waiting), and the runner it ran on. Only the fields used are read;
//! each must have its documented type, or the whole answer is unreadable.

use serde::{Deserialize, Serialize};

use super::Error;
use crate::job::{CiKind, FactSource, Runner, Sourced};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Liveness {
    Running,
    Finished,
    /// Neither: queued, waiting for approval, or a status this broker does not know.
    Unknown,
}

impl Liveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Unknown => "unknown",
        }
    }
}

/// The runner a job ran on, as one source told it: how the store keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// `ci_api`, or the webhook it came from (`webhook:github`). Kept last: the store tells the
    /// API's facts by how their JSON ends.
    pub source: String,
}

impl RunnerFacts {
    /// Facts cut to size, control characters dropped: a hostile answer or delivery cannot grow
    /// a record or forge a log line.
    pub fn bounded(self) -> Self {
        Self {
            id: self.id.map(fact),
            name: self.name.map(fact),
            group: self.group.map(fact),
            labels: self.labels.into_iter().take(MAX_LABELS).map(fact).collect(),
            queue: self.queue.map(fact),
            runner_type: self.runner_type.map(fact),
            manager: self.manager.map(fact),
            source: fact(self.source),
        }
    }

    /// The facts as a job's runner, each tagged with this report's source.
    pub fn to_runner(&self) -> Runner {
        let source = if self.source == "ci_api" { FactSource::CiApi } else { FactSource::Webhook };
        let told = |value: &Option<String>| value.clone().map(|v| Sourced::new(v, source));
        Runner {
            id: told(&self.id),
            name: told(&self.name),
            group: told(&self.group),
            labels: (!self.labels.is_empty()).then(|| Sourced::new(self.labels.clone(), source)),
            queue: told(&self.queue),
            runner_type: told(&self.runner_type),
            manager: told(&self.manager),
            unavailable: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobReport {
    pub liveness: Liveness,
    /// The CI's own word for the state, for logs and audit.
    pub status: String,
    pub runner: Option<RunnerFacts>,
}

/// Reads a job answer of `kind`'s API.
pub fn parse_answer(kind: CiKind, body: &[u8]) -> Result<JobReport, Error> {
    let api = api_name(kind);
    let malformed = |e: serde_json::Error| Error::Malformed { api, reason: e.to_string() };
    match kind {
        CiKind::Github => serde_json::from_slice::<GithubJob>(body).map_err(malformed).map(GithubJob::report),
        CiKind::Gitlab => serde_json::from_slice::<GitlabJob>(body).map_err(malformed).map(GitlabJob::report),
        CiKind::Buildkite => serde_json::from_slice::<BuildkiteJob>(body).map_err(malformed).map(BuildkiteJob::report),
        CiKind::Circleci => Err(Error::NoLocator { api, reason: "this CI has no job API the broker asks" }),
    }
}

pub(super) fn api_name(kind: CiKind) -> &'static str {
    match kind {
        CiKind::Github => "the GitHub API",
        CiKind::Gitlab => "the GitLab API",
        CiKind::Buildkite => "the Buildkite API",
        CiKind::Circleci => "the CircleCI API",
    }
}

/// Labels, names and ids are bounded as they are kept: a hostile answer cannot grow a record.
const MAX_FACT_CHARS: usize = 256;
const MAX_LABELS: usize = 64;

fn fact(value: impl ToString) -> String {
    value.to_string().chars().filter(|c| !c.is_control()).take(MAX_FACT_CHARS).collect()
}

/// The runner fields GitHub puts on a job, in the jobs API and in `workflow_job` webhooks alike;
/// null while the job is queued.
#[derive(Deserialize)]
pub(crate) struct GithubRunner {
    #[serde(default)]
    runner_id: Option<u64>,
    #[serde(default)]
    runner_name: Option<String>,
    #[serde(default)]
    runner_group_name: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
}

impl GithubRunner {
    /// The facts, told by `source`; none while no runner has the job.
    pub(crate) fn facts(self, source: &str) -> Option<RunnerFacts> {
        (self.runner_id.is_some() || self.runner_name.is_some()).then(|| {
            RunnerFacts {
                id: self.runner_id.map(|id| id.to_string()),
                name: self.runner_name,
                group: self.runner_group_name,
                labels: self.labels,
                source: source.to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        })
    }
}

/// `GET /repos/{owner}/{repo}/actions/jobs/{job_id}` (API version 2022-11-28).
#[derive(Deserialize)]
struct GithubJob {
    status: String,
    #[serde(flatten)]
    runner: GithubRunner,
}

impl GithubJob {
    fn report(self) -> JobReport {
        let liveness = match self.status.as_str() {
            "in_progress" => Liveness::Running,
            // Any conclusion: success, failure, cancelled, skipped, timed_out …
            "completed" => Liveness::Finished,
            _ => Liveness::Unknown,
        };
        JobReport { liveness, status: fact(self.status), runner: self.runner.facts("ci_api") }
    }
}

/// `GET /projects/:id/jobs/:job_id`.
#[derive(Deserialize)]
struct GitlabJob {
    status: String,
    #[serde(default)]
    runner: Option<GitlabRunner>,
    #[serde(default)]
    tag_list: Vec<String>,
    #[serde(default)]
    runner_manager: Option<GitlabRunnerManager>,
}

/// The host that ran the job, one of the many a runner configuration may have.
#[derive(Deserialize)]
struct GitlabRunnerManager {
    system_id: String,
}

#[derive(Deserialize)]
struct GitlabRunner {
    id: u64,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    runner_type: Option<String>,
}

impl GitlabJob {
    fn report(self) -> JobReport {
        let liveness = match self.status.as_str() {
            "running" => Liveness::Running,
            "success" | "failed" | "canceled" | "skipped" => Liveness::Finished,
            _ => Liveness::Unknown,
        };
        let (tags, manager) = (self.tag_list, self.runner_manager.map(|m| m.system_id));
        let runner = self.runner.map(|runner| {
            RunnerFacts {
                id: Some(runner.id.to_string()),
                name: runner.description,
                labels: tags,
                runner_type: runner.runner_type,
                manager,
                source: "ci_api".to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        });
        JobReport { liveness, status: fact(self.status), runner }
    }
}

/// `GET /v2/organizations/{org}/pipelines/{pipeline}/builds/{number}/jobs/{id}`.
#[derive(Deserialize)]
struct BuildkiteJob {
    state: String,
    #[serde(default)]
    agent: Option<BuildkiteAgent>,
    /// The job's targeting rules, such as `queue=default`.
    #[serde(default)]
    agent_query_rules: Vec<String>,
    #[serde(default)]
    cluster_id: Option<String>,
}

#[derive(Deserialize)]
struct BuildkiteAgent {
    id: String,
    #[serde(default)]
    name: Option<String>,
}

impl BuildkiteJob {
    fn report(self) -> JobReport {
        let liveness = match self.state.as_str() {
            "assigned" | "accepted" | "running" | "canceling" | "timing_out" => Liveness::Running,
            "passed" | "failed" | "canceled" | "timed_out" | "skipped" | "broken" | "expired" | "finished" => {
                Liveness::Finished
            }
            _ => Liveness::Unknown,
        };
        let queue = self.agent_query_rules.iter().find_map(|rule| rule.strip_prefix("queue=")).map(str::to_owned);
        let group = self.cluster_id;
        let runner = self.agent.map(|agent| {
            RunnerFacts {
                id: Some(agent.id),
                name: agent.name,
                group,
                queue,
                source: "ci_api".to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        });
        JobReport { liveness, status: fact(self.state), runner }
    }
}

/// `GET /v2/organizations/{org}/agents/{id}`: the agent's tags, as `NAME=VALUE`.
#[derive(Deserialize)]
struct BuildkiteAgentDetail {
    #[serde(default)]
    meta_data: Vec<String>,
}

/// The tags of a Buildkite agent answer, bounded as every runner fact is.
pub fn parse_agent_tags(body: &[u8]) -> Result<Vec<String>, Error> {
    let agent: BuildkiteAgentDetail = serde_json::from_slice(body)
        .map_err(|e| Error::Malformed { api: api_name(CiKind::Buildkite), reason: e.to_string() })?;
    Ok(agent.meta_data.into_iter().take(MAX_LABELS).map(fact).collect())
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
