//! What a CI's job answer says: whether the job runs, has finished, or is in a state that
//! settles neither (queued, waiting), and the runner it ran on. Only the fields used are read;
//! each must have its documented type, or the whole answer is unreadable.

use serde::{Deserialize, Serialize};

use super::Error;
use crate::job::CiKind;

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

/// The runner a job ran on, as one source told it.
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
    /// `ci_api`, or the webhook it came from (`webhook:github`).
    pub source: String,
}

impl RunnerFacts {
    /// Facts cut to size, control characters dropped: a hostile answer or delivery cannot grow
    /// a record or forge a log line.
    pub fn bounded(
        id: Option<String>,
        name: Option<String>,
        group: Option<String>,
        labels: Vec<String>,
        source: &str,
    ) -> Self {
        Self {
            id: id.map(fact),
            name: name.map(fact),
            group: group.map(fact),
            labels: labels.into_iter().take(MAX_LABELS).map(fact).collect(),
            source: fact(source),
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
            RunnerFacts::bounded(
                self.runner_id.map(|id| id.to_string()),
                self.runner_name,
                self.runner_group_name,
                self.labels,
                source,
            )
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
        let tags = self.tag_list;
        let runner = self.runner.map(|runner| {
            RunnerFacts::bounded(Some(runner.id.to_string()), runner.description, runner.runner_type, tags, "ci_api")
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
        let runner =
            self.agent.map(|agent| RunnerFacts::bounded(Some(agent.id), agent.name, None, Vec::new(), "ci_api"));
        JobReport { liveness, status: fact(self.state), runner }
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
