//! The verified, normalised identity of one CI job: what `identity` produces and `policy` judges.

use serde_json::{Map, Value};

/// Which CI system issued a job's token; decides how its claims are mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CiKind {
    Github,
    Gitlab,
    Buildkite,
    Circleci,
}

/// A trigger that runs with the target repository's trust on behalf of someone who may not have
/// it. Policy refuses such a job unless a rule names the trigger explicitly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DangerousTrigger {
    /// A GitHub event such as `pull_request_target`; allowed only by a rule whose `event`
    /// condition lists it literally.
    Event(String),
    /// A GitLab job whose `project_path` (the pipeline's source, e.g. a fork) differs from
    /// `job_project_path`; allowed only by a rule with a literal `claims.project_path` condition.
    ForeignProject { project_path: String },
}

/// One CI job, as far as its verified token tells. Every optional field is `None` when the token
/// lacks the claim; a policy condition on a missing field is false.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Job {
    /// The configured issuer's `name` (what policy rules say), not the `iss` URL.
    pub issuer: String,
    pub kind: Option<CiKind>,
    pub job_id: String,
    pub run_id: Option<String>,
    pub run_attempt: Option<String>,
    pub repository: String,
    pub repository_id: Option<String>,
    pub owner: Option<String>,
    pub owner_id: Option<String>,
    /// Always the full form: `refs/heads/…`, `refs/tags/…`.
    pub git_ref: Option<String>,
    pub ref_type: Option<String>,
    pub ref_protected: Option<bool>,
    pub environment: Option<String>,
    pub environment_protected: Option<bool>,
    pub event: Option<String>,
    pub workflow_ref: Option<String>,
    pub job_workflow_ref: Option<String>,
    pub runner_environment: Option<String>,
    /// What is known of the runner beyond its environment, each fact with its source.
    pub runner: Runner,
    pub dangerous_trigger: Option<DangerousTrigger>,
    /// Identifies this one token for replay protection: its `jti`, or the SHA-256 of its text.
    pub token_id: String,
    /// Unix seconds.
    pub expires_at: i64,
    /// Every claim of the token, for `claims:` conditions.
    pub claims: Map<String, Value>,
}

impl Job {
    /// What tells this job's runner host from others across jobs, for single-use tiers: GitHub's
    /// runner id with its name, Buildkite's agent id, GitLab's runner manager (a GitLab runner id
    /// names a configuration that many autoscaled hosts share). `Err` names what is missing.
    pub fn runner_key(&self) -> Result<String, &'static str> {
        let runner = &self.runner;
        match self.kind {
            Some(CiKind::Github) => match (&runner.id, &runner.name) {
                (Some(id), Some(name)) => Ok(format!("{}/{}", id.value, name.value)),
                (None, _) => Err("runner_id"),
                (Some(_), None) => Err("runner_name"),
            },
            Some(CiKind::Buildkite) => runner.id.as_ref().map(|id| id.value.clone()).ok_or("runner_id"),
            Some(CiKind::Gitlab) => runner.manager.as_ref().map(|m| m.value.clone()).ok_or("runner_manager"),
            Some(CiKind::Circleci) | None => Err("runner_id"),
        }
    }

    pub fn new(issuer: impl Into<String>, job_id: impl Into<String>, repository: impl Into<String>) -> Self {
        Self { issuer: issuer.into(), job_id: job_id.into(), repository: repository.into(), ..Self::default() }
    }
}

/// Where a runner fact came from. A signed claim beats the CI's API, which beats a webhook;
/// `given` is what a policy author passed to `policy explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    Webhook,
    CiApi,
    Token,
    Given,
}

impl FactSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::CiApi => "ci_api",
            Self::Token => "token",
            Self::Given => "given",
        }
    }
}

/// One fact and who told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: FactSource,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: FactSource) -> Self {
        Self { value, source }
    }
}

/// The runner a job runs on, as far as its token, the CI's API and webhooks told. A policy
/// condition on a fact nobody told is false.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Runner {
    /// GitHub's `runner_id`, GitLab's runner (a configuration many hosts may share), Buildkite's
    /// `agent_id`.
    pub id: Option<Sourced<String>>,
    pub name: Option<Sourced<String>>,
    /// GitHub's runner group; Buildkite's cluster.
    pub group: Option<Sourced<String>>,
    /// GitHub: the labels the job's `runs-on` asked for; GitLab: the job's tags; Buildkite: the
    /// agent's tags.
    pub labels: Option<Sourced<Vec<String>>>,
    /// Buildkite's queue.
    pub queue: Option<Sourced<String>>,
    /// GitLab's `instance_type`, `group_type` or `project_type`.
    pub runner_type: Option<Sourced<String>>,
    /// GitLab's runner manager (`system_id`): the host, where `id` names only a configuration.
    pub manager: Option<Sourced<String>>,
    /// Why facts the token does not carry could not be had, when they were sought.
    pub unavailable: Option<String>,
}

impl Runner {
    /// Takes each of `other`'s facts where this one has none or one from a weaker source.
    pub fn merge(&mut self, other: Runner) {
        fn take<T>(mine: &mut Option<Sourced<T>>, theirs: Option<Sourced<T>>) {
            if let Some(theirs) = theirs
                && mine.as_ref().is_none_or(|m| m.source < theirs.source)
            {
                *mine = Some(theirs);
            }
        }
        take(&mut self.id, other.id);
        take(&mut self.name, other.name);
        take(&mut self.group, other.group);
        take(&mut self.labels, other.labels);
        take(&mut self.queue, other.queue);
        take(&mut self.runner_type, other.runner_type);
        take(&mut self.manager, other.manager);
    }
}
