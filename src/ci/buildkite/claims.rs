//! Buildkite agent OIDC tokens: one issuer for every organisation, so the repository is
//! `organization_slug/pipeline_slug` and `organization_id` is the owner id policy should pin.

use serde::Deserialize;
use serde_json::Value;

use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::claims::{ClaimsError, decode, required};
use crate::ci::{FactSource, Job, MAX_LABELS, Runner, RunnerKey, Sourced, bounded_fact};

#[derive(Deserialize)]
struct Claims {
    job_id: Option<String>,
    organization_slug: Option<String>,
    organization_id: Option<String>,
    pipeline_slug: Option<String>,
    build_number: Option<u64>,
    build_branch: Option<String>,
    build_tag: Option<String>,
    build_source: Option<String>,
    agent_id: Option<String>,
    runner_environment: Option<String>,
    /// Optional claims, present when the job asked for them (`oidc request-token --claim`).
    cluster_name: Option<String>,
    queue_key: Option<String>,
}

pub fn job(issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
    let c: Claims = decode(claims)?;
    let organization = required(c.organization_slug, "organization_slug")?;
    let pipeline = required(c.pipeline_slug, "pipeline_slug")?;
    let (git_ref, ref_type) = match (c.build_branch, c.build_tag) {
        (Some(branch), _) if !branch.is_empty() => (Some(format!("refs/heads/{branch}")), Some("branch")),
        (_, Some(tag)) if !tag.is_empty() => (Some(format!("refs/tags/{tag}")), Some("tag")),
        _ => (None, None),
    };
    Ok(Job {
        kind: Some(CiKind::Buildkite),
        run_id: c.build_number.map(|n| n.to_string()),
        owner: Some(organization.clone()),
        owner_id: c.organization_id,
        git_ref,
        ref_type: ref_type.map(str::to_owned),
        event: c.build_source,
        runner_environment: c.runner_environment,
        runner: Runner {
            id: token_fact(c.agent_id),
            group: token_fact(c.cluster_name),
            queue: token_fact(c.queue_key),
            labels: agent_tags(claims).map(|tags| Sourced::new(tags, FactSource::Token)),
            ..Runner::default()
        },
        // An agent id names one agent process, on one host.
        runner_key_by: RunnerKey::Id,
        ..Job::new(issuer.name, required(c.job_id, "job_id")?, format!("{organization}/{pipeline}"))
    })
}

fn token_fact(value: Option<String>) -> Option<Sourced<String>> {
    value.map(|v| Sourced::new(v, FactSource::Token))
}

/// `agent_tag:NAME` claims as `NAME=VALUE`, the form Buildkite gives agent tags in elsewhere;
/// `None` when the job asked for none. Bounded as every runner fact is.
fn agent_tags(claims: &Value) -> Option<Vec<String>> {
    let tags: Vec<String> = claims
        .as_object()?
        .iter()
        .filter_map(|(key, value)| Some(format!("{}={}", key.strip_prefix(AGENT_TAG_CLAIM)?, value.as_str()?)))
        .take(MAX_LABELS)
        .map(bounded_fact)
        .collect();
    (!tags.is_empty()).then_some(tags)
}

const AGENT_TAG_CLAIM: &str = "agent_tag:";
