//! CircleCI OIDC tokens: namespaced claims; the repository is the VCS origin
//! (`github.com/org/repo`) and its stable id the CircleCI project id.

use serde::Deserialize;
use serde_json::Value;

use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::claims::{ClaimsError, decode, required};
use crate::ci::{DangerousTrigger, Job};

/// What a policy rule names (`event: ssh_rerun`) to let a job rerun with SSH have credentials: a
/// person has a shell inside the job, with everything the job may do.
pub const SSH_RERUN_EVENT: &str = "ssh_rerun";

#[derive(Deserialize)]
struct Claims {
    #[serde(rename = "oidc.circleci.com/job-id")]
    job_id: Option<String>,
    #[serde(rename = "oidc.circleci.com/project-id")]
    project_id: Option<String>,
    #[serde(rename = "oidc.circleci.com/org-id")]
    org_id: Option<String>,
    #[serde(rename = "oidc.circleci.com/vcs-origin")]
    vcs_origin: Option<String>,
    #[serde(rename = "oidc.circleci.com/vcs-ref")]
    vcs_ref: Option<String>,
    #[serde(rename = "oidc.circleci.com/pipeline-id")]
    pipeline_id: Option<String>,
    // circleci-docs: openid-connect-tokens.adoc, "Additional claims": `oidc.circleci.com/ssh-rerun`,
    // "A boolean indicating if the CI job is started using the SSH rerun feature". Anything but a
    // boolean is refused with the claims; absent is an ordinary run.
    #[serde(rename = "oidc.circleci.com/ssh-rerun", default)]
    ssh_rerun: bool,
}

pub fn job(issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
    let c: Claims = decode(claims)?;
    let ref_type = c.vcs_ref.as_deref().and_then(|r| {
        if r.starts_with("refs/heads/") {
            Some("branch".to_owned())
        } else if r.starts_with("refs/tags/") {
            Some("tag".to_owned())
        } else {
            None
        }
    });
    Ok(Job {
        kind: Some(CiKind::Circleci),
        run_id: c.pipeline_id,
        repository_id: c.project_id,
        owner_id: c.org_id,
        git_ref: c.vcs_ref,
        ref_type,
        event: c.ssh_rerun.then(|| SSH_RERUN_EVENT.to_owned()),
        dangerous_trigger: c.ssh_rerun.then(|| DangerousTrigger::Event(SSH_RERUN_EVENT.to_owned())),
        ..Job::new(
            issuer.name,
            required(c.job_id, "oidc.circleci.com/job-id")?,
            required(c.vcs_origin, "oidc.circleci.com/vcs-origin")?,
        )
    })
}
