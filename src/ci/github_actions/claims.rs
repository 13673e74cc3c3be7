//! GitHub Actions ID tokens: every claim is a string; the job is `check_run_id`.

use serde::Deserialize;
use serde_json::Value;

use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::claims::{ClaimsError, decode, required};
use crate::ci::{DangerousTrigger, Job, RunnerKey};

/// Events whose workflows run with the base repository's trust on behalf of whoever opened the
/// pull request or comment.
const DANGEROUS_EVENTS: &[&str] = &["pull_request_target", "workflow_run", "issue_comment"];

#[derive(Deserialize)]
struct Claims {
    check_run_id: Option<String>,
    repository: Option<String>,
    repository_id: Option<String>,
    repository_owner: Option<String>,
    repository_owner_id: Option<String>,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    ref_type: Option<String>,
    environment: Option<String>,
    event_name: Option<String>,
    workflow_ref: Option<String>,
    job_workflow_ref: Option<String>,
    runner_environment: Option<String>,
    run_id: Option<String>,
    run_attempt: Option<String>,
}

pub fn job(issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
    let c: Claims = decode(claims)?;
    let dangerous_trigger = c
        .event_name
        .as_deref()
        .filter(|event| DANGEROUS_EVENTS.contains(event))
        .map(|event| DangerousTrigger::Event(event.to_owned()));
    Ok(Job {
        kind: Some(CiKind::Github),
        run_id: c.run_id,
        run_attempt: c.run_attempt,
        repository_id: c.repository_id,
        owner: c.repository_owner,
        owner_id: c.repository_owner_id,
        git_ref: c.git_ref,
        ref_type: c.ref_type,
        environment: c.environment.filter(|env| !env.is_empty()),
        event: c.event_name,
        workflow_ref: c.workflow_ref,
        job_workflow_ref: c.job_workflow_ref,
        runner_environment: c.runner_environment,
        // A runner id is reused once its runner is removed; with the name it names one host.
        runner_key_by: RunnerKey::IdAndName,
        dangerous_trigger,
        ..Job::new(issuer.name, required(c.check_run_id, "check_run_id")?, required(c.repository, "repository")?)
    })
}
