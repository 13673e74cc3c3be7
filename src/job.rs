//! The verified, normalised identity of one CI job: what `identity` produces and `policy` judges.

use serde_json::{Map, Value};

use crate::ci::CiKind;

/// Which of a runner's facts tell its host apart from every other, for single-use tiers. Each
/// CI's claim mapping says which, since what a runner id names differs between CIs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunnerKey {
    /// No fact this CI gives names a host.
    #[default]
    Unknown,
    /// The runner's id.
    Id,
    /// The runner's id with its name.
    IdAndName,
    /// The runner manager: the host, where the id names a configuration many hosts share.
    Manager,
    /// The runner's name, where the CI gives it no id (a Jenkins agent).
    Name,
    /// The runner's group with its name, where a name is unique only within its group (an Azure
    /// Pipelines agent in its pool).
    GroupAndName,
}

/// A job within its run, as an exchange request names it, for a CI whose token names only the
/// run (Azure Pipelines: `System.JobId` and `System.JobAttempt`). The caller asserts it; only the
/// CI's API can confirm it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawNamedJob", deny_unknown_fields)]
pub struct NamedJob {
    /// A GUID, lowercase.
    pub id: String,
    pub attempt: u32,
}

/// A named job as sent, before it is checked.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNamedJob {
    id: String,
    attempt: u32,
}

impl TryFrom<RawNamedJob> for NamedJob {
    type Error = String;

    fn try_from(raw: RawNamedJob) -> Result<Self, String> {
        Self::new(&raw.id, raw.attempt)
    }
}

impl NamedJob {
    /// The most attempts of one job a CI makes; a larger number names no attempt.
    pub const MAX_ATTEMPT: u32 = 1000;
    /// `8-4-4-4-12` hexadecimal digits.
    pub const ID_PATTERN: &'static str =
        "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

    /// A job id shaped as a GUID and an attempt of 1 to `MAX_ATTEMPT`; the error says which is
    /// wrong, never echoing what was sent.
    pub fn new(id: &str, attempt: u32) -> Result<Self, String> {
        if !is_guid(id) {
            return Err("`job.id` must be a GUID (8-4-4-4-12 hexadecimal digits)".into());
        }
        if !(1..=Self::MAX_ATTEMPT).contains(&attempt) {
            return Err(format!("`job.attempt` must be 1 to {}", Self::MAX_ATTEMPT));
        }
        Ok(Self { id: id.to_ascii_lowercase(), attempt })
    }
}

/// Whether `text` is a GUID in its usual form: `8-4-4-4-12` hexadecimal digits.
pub fn is_guid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
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
    /// The CI's own name for the job the build belongs to, where it has one apart from the
    /// repository: Jenkins' full name, `octo-org/octo-repo/main`.
    pub job_name: Option<String>,
    /// The token's `runner_environment` claim, or its CI's fixed one (Jenkins: `self-hosted`).
    /// Where the token says nothing, the CI's API may (`runner.environment`): read both through
    /// `Job::effective_runner_environment`.
    pub runner_environment: Option<String>,
    /// What is known of the runner beyond what its token says, each fact with its source.
    pub runner: Runner,
    /// Which runner facts identify its host, as the job's CI says.
    pub runner_key_by: RunnerKey,
    /// The job within its run that the exchange request named and this job is bound to, for a CI
    /// whose token names only the run.
    pub named_job: Option<NamedJob>,
    pub dangerous_trigger: Option<DangerousTrigger>,
    /// The fork a change request comes from, where the CI names one (Jenkins' `SCMHeadOrigin$Fork`).
    pub fork: Option<String>,
    /// Why the job's `ref`, `ref_type` and `event` are unknown, when its token cannot tell them
    /// and the CI's API did not (a Jenkins build): a condition on them then fails saying so.
    pub ref_unknown: Option<String>,
    /// Identifies this one token for replay protection: `jti:<jti>`, or without one
    /// `signed-sha256:<SHA-256 of its signed part>` (what its signature covers, so that a
    /// re-encoded signature names the same token).
    pub token_id: String,
    /// For a token without `jti`, the id earlier releases spent it under (`sha256:<SHA-256 of
    /// its whole text>`), spent too so that a token spent before the upgrade stays spent.
    pub legacy_token_id: Option<String>,
    /// Unix seconds.
    pub expires_at: i64,
    /// Every claim of the token, for `claims:` conditions.
    pub claims: Map<String, Value>,
}

impl Job {
    /// What tells this job's runner host from others across jobs, for single-use tiers, as the
    /// job's CI says (`runner_key_by`). `Err` names the fact that is missing.
    pub fn runner_key(&self) -> Result<String, &'static str> {
        let runner = &self.runner;
        match self.runner_key_by {
            RunnerKey::IdAndName => match (&runner.id, &runner.name) {
                (Some(id), Some(name)) => Ok(format!("{}/{}", id.value, name.value)),
                (None, _) => Err("runner_id"),
                (Some(_), None) => Err("runner_name"),
            },
            RunnerKey::Id => runner.id.as_ref().map(|id| id.value.clone()).ok_or("runner_id"),
            RunnerKey::Manager => runner.manager.as_ref().map(|m| m.value.clone()).ok_or("runner_manager"),
            RunnerKey::Name => runner.name.as_ref().map(|name| name.value.clone()).ok_or("runner_name"),
            RunnerKey::GroupAndName => match (&runner.group, &runner.name) {
                (Some(group), Some(name)) => Ok(format!("{}/{}", group.value, name.value)),
                (None, _) => Err("runner_group"),
                (Some(_), None) => Err("runner_name"),
            },
            RunnerKey::Unknown => Err("runner_id"),
        }
    }

    /// Whether the job's runner is its CI's hosted one or `self-hosted`, and who told it: the
    /// token's claim wherever there is one, since a signed claim beats the CI's API and webhooks,
    /// else what they told (an Azure Pipelines pool). A fact a policy author gives `policy
    /// explain` or `policy test` beats the claim, as every given fact does. Policy, the audit
    /// trail and the fleet report all read it here, so they never disagree.
    pub fn effective_runner_environment(&self) -> Option<Sourced<&str>> {
        let claim = self.runner_environment.as_deref().map(|claim| Sourced::new(claim, FactSource::Token));
        let told = self.runner.environment.as_ref().map(|fact| Sourced::new(fact.value.as_str(), fact.source));
        match (claim, told) {
            (Some(claim), Some(told)) => Some(if told.source > claim.source { told } else { claim }),
            (claim, told) => claim.or(told),
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
    /// Hosted by the CI or `self-hosted`, where the token does not say: Azure Pipelines' pool,
    /// `microsoft-hosted` or `self-hosted`. A token's claim is `Job::runner_environment`.
    pub environment: Option<Sourced<String>>,
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
        take(&mut self.environment, other.environment);
        take(&mut self.id, other.id);
        take(&mut self.name, other.name);
        take(&mut self.group, other.group);
        take(&mut self.labels, other.labels);
        take(&mut self.queue, other.queue);
        take(&mut self.runner_type, other.runner_type);
        take(&mut self.manager, other.manager);
    }
}

/// The runner a job ran on, as one source told it: how the store keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Absent from what brokers before it stored, and from every CI's facts but Azure Pipelines'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// `ci_api`, or the webhook it came from (`webhook:github`). Kept last: the store tells the
    /// API's facts by how their JSON ends.
    pub source: String,
}

/// Labels, names and ids are bounded as they are kept: a hostile answer cannot grow a record.
pub const MAX_FACT_CHARS: usize = 256;
pub const MAX_LABELS: usize = 64;

/// A fact cut to size, control characters dropped: a hostile answer or delivery cannot grow a
/// record or forge a log line.
pub fn bounded_fact(value: impl ToString) -> String {
    value.to_string().chars().filter(|c| !c.is_control()).take(MAX_FACT_CHARS).collect()
}

impl RunnerFacts {
    /// Every fact bounded (`bounded_fact`), and at most `MAX_LABELS` labels.
    pub fn bounded(self) -> Self {
        Self {
            id: self.id.map(bounded_fact),
            name: self.name.map(bounded_fact),
            group: self.group.map(bounded_fact),
            labels: self.labels.into_iter().take(MAX_LABELS).map(bounded_fact).collect(),
            queue: self.queue.map(bounded_fact),
            runner_type: self.runner_type.map(bounded_fact),
            manager: self.manager.map(bounded_fact),
            environment: self.environment.map(bounded_fact),
            source: bounded_fact(self.source),
        }
    }

    /// The facts as a job's runner, each tagged with this report's source.
    pub fn to_runner(&self) -> Runner {
        let source = if self.source == FactSource::CiApi.as_str() { FactSource::CiApi } else { FactSource::Webhook };
        let told = |value: &Option<String>| value.clone().map(|v| Sourced::new(v, source));
        Runner {
            environment: told(&self.environment),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_job_is_a_guid_and_a_bounded_attempt() {
        let job = NamedJob::new("E87E3D16-29B0-5003-7D86-82B704B96244", 1000).unwrap();
        assert_eq!((job.id.as_str(), job.attempt), ("e87e3d16-29b0-5003-7d86-82b704b96244", 1000));
        for (id, attempt) in [
            ("e87e3d16-29b0-5003-7d86-82b704b96244", 0),
            ("e87e3d16-29b0-5003-7d86-82b704b96244", 1001),
            ("e87e3d1629b050037d8682b704b96244", 1),
            ("{e87e3d16-29b0-5003-7d86-82b704b96244}", 1),
            ("e87e3d16-29b0-5003-7d86-82b704b9624g", 1),
            ("e87e3d16-29b0-5003-7d86-82b704b96244-", 1),
            ("__default", 1),
            ("", 1),
        ] {
            assert!(NamedJob::new(id, attempt).is_err(), "{id} {attempt}");
        }
        let sent: Result<NamedJob, _> =
            serde_json::from_str(r#"{"id": "e87e3d16-29b0-5003-7d86-82b704b96244", "attempt": 1, "x": 1}"#);
        assert!(sent.is_err(), "unknown fields refused");
    }

    #[test]
    fn each_runner_key_names_the_fact_it_lacks() {
        let fact = |value: &str| Some(Sourced::new(value.to_owned(), FactSource::CiApi));
        let runner = |id: Option<&str>, name: Option<&str>, group: Option<&str>, manager: Option<&str>| Runner {
            id: id.and_then(fact),
            name: name.and_then(fact),
            group: group.and_then(fact),
            manager: manager.and_then(fact),
            ..Runner::default()
        };
        let every = runner(Some("42"), Some("agent-7"), Some("linux-pool"), Some("s_7c3b"));
        let cases = [
            (RunnerKey::IdAndName, every.clone(), Ok("42/agent-7")),
            (RunnerKey::IdAndName, runner(None, Some("agent-7"), None, None), Err("runner_id")),
            (RunnerKey::IdAndName, runner(Some("42"), None, None, None), Err("runner_name")),
            (RunnerKey::Id, every.clone(), Ok("42")),
            (RunnerKey::Id, runner(None, Some("agent-7"), Some("linux-pool"), None), Err("runner_id")),
            (RunnerKey::Manager, every.clone(), Ok("s_7c3b")),
            (RunnerKey::Manager, runner(Some("42"), Some("agent-7"), None, None), Err("runner_manager")),
            // A Jenkins agent: its name alone, whatever else is known.
            (RunnerKey::Name, every.clone(), Ok("agent-7")),
            (RunnerKey::Name, runner(Some("42"), None, Some("linux-pool"), None), Err("runner_name")),
            // An Azure agent, within its pool: a run-bound exchange knows the pool, not the agent.
            (RunnerKey::GroupAndName, every.clone(), Ok("linux-pool/agent-7")),
            (RunnerKey::GroupAndName, runner(Some("42"), None, Some("linux-pool"), None), Err("runner_name")),
            (RunnerKey::GroupAndName, runner(None, Some("agent-7"), None, None), Err("runner_group")),
            (RunnerKey::GroupAndName, Runner::default(), Err("runner_group")),
            (RunnerKey::Unknown, every, Err("runner_id")),
        ];
        for (key, runner, expected) in cases {
            let job = Job { runner_key_by: key, runner: runner.clone(), ..Job::default() };
            assert_eq!(job.runner_key().as_deref().map_err(|fact| *fact), expected, "{key:?} {runner:?}");
        }
    }

    #[test]
    fn the_runner_environment_is_the_token_s_before_any_other_source() {
        let mut job = Job::default();
        assert_eq!(job.effective_runner_environment(), None);
        job.runner.merge(Runner {
            environment: Some(Sourced::new("self-hosted".into(), FactSource::Webhook)),
            ..Runner::default()
        });
        job.runner.merge(Runner {
            environment: Some(Sourced::new("microsoft-hosted".into(), FactSource::CiApi)),
            ..Runner::default()
        });
        assert_eq!(job.effective_runner_environment(), Some(Sourced::new("microsoft-hosted", FactSource::CiApi)));
        job.runner_environment = Some("github-hosted".into());
        assert_eq!(job.effective_runner_environment(), Some(Sourced::new("github-hosted", FactSource::Token)));
        job.runner.environment = Some(Sourced::new("self-hosted".into(), FactSource::Given));
        assert_eq!(job.effective_runner_environment(), Some(Sourced::new("self-hosted", FactSource::Given)));
    }

    #[test]
    fn stored_facts_keep_the_environment_and_read_without_it() {
        let facts = RunnerFacts {
            group: Some("linux-pool".into()),
            environment: Some("self-hosted".into()),
            source: "ci_api".into(),
            ..RunnerFacts::default()
        };
        let stored = serde_json::to_string(&facts).unwrap();
        assert_eq!(stored, r#"{"group":"linux-pool","environment":"self-hosted","source":"ci_api"}"#);
        let runner = serde_json::from_str::<RunnerFacts>(&stored).unwrap().to_runner();
        assert_eq!(runner.environment, Some(Sourced::new("self-hosted".into(), FactSource::CiApi)));
        let before = serde_json::from_str::<RunnerFacts>(r#"{"group":"linux-pool","source":"ci_api"}"#).unwrap();
        assert_eq!(before.environment, None);
    }
}
