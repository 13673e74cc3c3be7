//! The verified, normalised identity of one CI job: what each CI's claim mapping produces and
//! `policy` judges.

use serde_json::{Map, Value};

use super::{CiKind, FactSource, NamedJob, Runner, RunnerKey, Sourced};

/// A trigger that runs with the target repository's trust on behalf of someone who may not have
/// it. Policy refuses such a job unless a rule names the trigger explicitly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DangerousTrigger {
    /// A GitHub event such as `pull_request_target`; allowed only by a rule whose `event`
    /// condition lists it literally.
    Event(String),
    /// A claim whose value says the job runs code from outside the project it is trusted as (a
    /// GitLab job whose `project_path`, the pipeline's source, e.g. a fork, differs from
    /// `job_project_path`); allowed only by a rule with a literal `claims.<claim>` condition.
    /// `why` says so after the value, in a refusal.
    ForeignClaim { claim: &'static str, value: String, why: &'static str },
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
