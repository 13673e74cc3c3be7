//! Buildkite agent OIDC tokens: one issuer for every organisation, so the repository is
//! `organization_slug/pipeline_slug` and `organization_id` is the owner id policy should pin.

use serde::Deserialize;
use serde_json::Value;

use super::Error;
use super::claims::{decode, required};
use crate::job::{CiKind, Job};

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
}

pub fn job(issuer: &str, claims: &Value) -> Result<Job, Error> {
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
        runner_id: c.agent_id,
        ..Job::new(issuer, required(c.job_id, "job_id")?, format!("{organization}/{pipeline}"))
    })
}
