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
    pub runner_id: Option<String>,
    pub dangerous_trigger: Option<DangerousTrigger>,
    /// Identifies this one token for replay protection: its `jti`, or the SHA-256 of its text.
    pub token_id: String,
    /// Unix seconds.
    pub expires_at: i64,
    /// Every claim of the token, for `claims:` conditions.
    pub claims: Map<String, Value>,
}

impl Job {
    pub fn new(issuer: impl Into<String>, job_id: impl Into<String>, repository: impl Into<String>) -> Self {
        Self { issuer: issuer.into(), job_id: job_id.into(), repository: repository.into(), ..Self::default() }
    }
}
