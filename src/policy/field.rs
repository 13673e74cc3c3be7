//! Which fact about a job a condition reads (a claim, the repository, a runner fact …), and the
//! job's value of it as found: text, a raw claim, a runner fact with who told it, or missing.

use std::fmt;

use serde_json::Value;

use super::values::bool_text;
use crate::ci::{FactSource, Job, Sourced};

/// The job field a condition reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Issuer,
    Repository,
    RepositoryId,
    Owner,
    OwnerId,
    Ref,
    RefType,
    RefProtected,
    Environment,
    EnvironmentProtected,
    Event,
    WorkflowRef,
    JobWorkflowRef,
    JobName,
    RunnerEnvironment,
    RunnerId,
    RunnerName,
    RunnerGroup,
    RunnerLabels,
    RunnerQueue,
    RunnerType,
    RunnerManager,
    RunnerTier,
    Claim(Box<str>),
}

impl Field {
    /// The policy keys of the named fields, in the order the docs list them.
    pub(super) const KEYS: &'static [&'static str] = &[
        "issuer",
        "repository",
        "repository_id",
        "owner",
        "owner_id",
        "ref",
        "ref_type",
        "ref_protected",
        "environment",
        "environment_protected",
        "event",
        "workflow_ref",
        "job_workflow_ref",
        "job_name",
        "runner_environment",
        "runner_id",
        "runner_name",
        "runner_group",
        "runner_labels",
        "runner_queue",
        "runner_type",
        "runner_manager",
        "runner_tier",
        "claims",
    ];

    pub(super) fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "issuer" => Self::Issuer,
            "repository" => Self::Repository,
            "repository_id" => Self::RepositoryId,
            "owner" => Self::Owner,
            "owner_id" => Self::OwnerId,
            "ref" => Self::Ref,
            "ref_type" => Self::RefType,
            "ref_protected" => Self::RefProtected,
            "environment" => Self::Environment,
            "environment_protected" => Self::EnvironmentProtected,
            "event" => Self::Event,
            "workflow_ref" => Self::WorkflowRef,
            "job_workflow_ref" => Self::JobWorkflowRef,
            "job_name" => Self::JobName,
            "runner_environment" => Self::RunnerEnvironment,
            "runner_id" => Self::RunnerId,
            "runner_name" => Self::RunnerName,
            "runner_group" => Self::RunnerGroup,
            "runner_labels" => Self::RunnerLabels,
            "runner_queue" => Self::RunnerQueue,
            "runner_type" => Self::RunnerType,
            "runner_manager" => Self::RunnerManager,
            "runner_tier" => Self::RunnerTier,
            _ => return None,
        })
    }

    fn key(&self) -> &str {
        match self {
            Self::Issuer => "issuer",
            Self::Repository => "repository",
            Self::RepositoryId => "repository_id",
            Self::Owner => "owner",
            Self::OwnerId => "owner_id",
            Self::Ref => "ref",
            Self::RefType => "ref_type",
            Self::RefProtected => "ref_protected",
            Self::Environment => "environment",
            Self::EnvironmentProtected => "environment_protected",
            Self::Event => "event",
            Self::WorkflowRef => "workflow_ref",
            Self::JobWorkflowRef => "job_workflow_ref",
            Self::JobName => "job_name",
            Self::RunnerEnvironment => "runner_environment",
            Self::RunnerId => "runner_id",
            Self::RunnerName => "runner_name",
            Self::RunnerGroup => "runner_group",
            Self::RunnerLabels => "runner_labels",
            Self::RunnerQueue => "runner_queue",
            Self::RunnerType => "runner_type",
            Self::RunnerManager => "runner_manager",
            Self::RunnerTier => "runner_tier",
            Self::Claim(name) => name,
        }
    }

    /// What a build runs for (its ref, of which kind, on which event), which some CIs' tokens do
    /// not tell: `Job::ref_unknown` says why when it is missing.
    pub(super) fn is_source_fact(&self) -> bool {
        matches!(self, Self::Ref | Self::RefType | Self::Event)
    }

    /// A fact about the runner that the token may not carry, so that the CI's API or a webhook
    /// may have to tell it (some CIs' tokens say nothing of the runner's environment).
    pub(super) fn is_runner_fact(&self) -> bool {
        matches!(
            self,
            Self::RunnerEnvironment
                | Self::RunnerId
                | Self::RunnerName
                | Self::RunnerGroup
                | Self::RunnerLabels
                | Self::RunnerQueue
                | Self::RunnerType
                | Self::RunnerManager
        )
    }

    pub(super) fn read<'j>(&self, ctx: &Ctx<'j>) -> Actual<'j> {
        let job = ctx.job;
        let text = |v: &'j Option<String>| v.as_deref().map_or(Actual::Missing, Actual::Text);
        let fact = |v: &'j Option<Sourced<String>>| {
            v.as_ref().map_or(Actual::Missing, |fact| Actual::Fact(&fact.value, fact.source))
        };
        let flag = |v: Option<bool>| v.map_or(Actual::Missing, |b| Actual::Text(bool_text(b)));
        // A token's claim reads as the claims do; a fact the CI's API told shows its source.
        let environment = |v: Option<Sourced<&'j str>>| match v {
            None => Actual::Missing,
            Some(Sourced { value, source: FactSource::Token }) => Actual::Text(value),
            Some(Sourced { value, source }) => Actual::Fact(value, source),
        };
        match self {
            Self::Issuer => Actual::Text(&job.issuer),
            Self::Repository => Actual::Text(&job.repository),
            Self::RepositoryId => text(&job.repository_id),
            Self::Owner => text(&job.owner),
            Self::OwnerId => text(&job.owner_id),
            Self::Ref => text(&job.git_ref),
            Self::RefType => text(&job.ref_type),
            Self::RefProtected => flag(job.ref_protected),
            Self::Environment => text(&job.environment),
            Self::EnvironmentProtected => flag(job.environment_protected),
            Self::Event => text(&job.event),
            Self::WorkflowRef => text(&job.workflow_ref),
            Self::JobWorkflowRef => text(&job.job_workflow_ref),
            Self::JobName => text(&job.job_name),
            Self::RunnerEnvironment => environment(job.effective_runner_environment()),
            Self::RunnerId => fact(&job.runner.id),
            Self::RunnerName => fact(&job.runner.name),
            Self::RunnerGroup => fact(&job.runner.group),
            Self::RunnerLabels => job
                .runner
                .labels
                .as_ref()
                .map_or(Actual::Missing, |labels| Actual::Labels(&labels.value, labels.source)),
            Self::RunnerQueue => fact(&job.runner.queue),
            Self::RunnerType => fact(&job.runner.runner_type),
            Self::RunnerManager => fact(&job.runner.manager),
            Self::RunnerTier => ctx.tier.map_or(Actual::Missing, Actual::Text),
            Self::Claim(name) => job.claims.get(&**name).map_or(Actual::Missing, Actual::Claim),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Claim(name) => write!(f, "claims.{name}"),
            other => f.write_str(other.key()),
        }
    }
}

/// What a job is judged with: the job and the runner tier computed for it once per decision.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'j> {
    pub(super) job: &'j Job,
    pub(super) tier: Option<&'j str>,
}

pub(super) enum Actual<'j> {
    Missing,
    Text(&'j str),
    Claim(&'j Value),
    /// A runner fact, with who told it.
    Fact(&'j str, FactSource),
    Labels(&'j [String], FactSource),
}
