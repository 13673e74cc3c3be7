//! Azure Pipelines' pipeline OIDC tokens (Microsoft documents no claims; the shapes are public
//! captures): every claim a string. The token names the run, not the job, so the run is the job
//! its credentials are bound to, unless the exchange names the job within it (`bind_job`). The
//! issuer names the organisation, but every organisation's tokens are signed with one shared
//! JWKS: `org_id` must be the organisation the issuer names.

use serde::Deserialize;
use serde_json::Value;

use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::claims::{ClaimsError, decode, required};
use crate::ci::{Job, NamedJob, RunnerKey};

#[derive(Deserialize)]
struct Claims {
    iss: Option<String>,
    org_id: Option<String>,
    prj_id: Option<String>,
    def_id: Option<String>,
    rpo_id: Option<String>,
    rpo_ref: Option<String>,
    run_id: Option<String>,
}

pub fn job(issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
    let c: Claims = decode(claims)?;
    let iss = required(c.iss, "iss")?;
    let organisation = required(c.org_id, "org_id")?;
    if iss.rsplit_once('/').is_none_or(|(_, named)| named != organisation) {
        return Err(ClaimsError::Refused(
            "`org_id` is not the organisation the issuer names: the keys are shared by every organisation".into(),
        ));
    }
    required(c.prj_id, "prj_id")?;
    required(c.def_id, "def_id")?;
    let run_id = required(c.run_id, "run_id")?;
    if !run_id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ClaimsError::WrongType("`run_id` must be a run's number".into()));
    }
    let git_ref = c.rpo_ref.filter(|r| !r.is_empty());
    let ref_type = git_ref.as_deref().and_then(|r| {
        if r.starts_with("refs/heads/") {
            Some("branch")
        } else if r.starts_with("refs/tags/") {
            Some("tag")
        } else {
            None
        }
    });
    // A pull request's validation build runs on its merge ref.
    let event = git_ref.as_deref().filter(|r| r.starts_with("refs/pull/")).map(|_| "pull_request".to_owned());
    Ok(Job {
        kind: Some(CiKind::AzurePipelines),
        run_id: Some(run_id.clone()),
        owner_id: Some(organisation),
        git_ref,
        ref_type: ref_type.map(str::to_owned),
        event,
        // An agent is named within its pool, so the pool and the agent's name tell it from
        // others. Only a job's timeline record names its agent: a run-bound exchange knows at most
        // the pool, so a single-use tier refuses it for the agent's name, the fact it lacks.
        runner_key_by: RunnerKey::GroupAndName,
        ..Job::new(issuer.name, run_id, required(c.rpo_id, "rpo_id")?)
    })
}

/// Binds the run's credentials to the job within it that the exchange request names, once the
/// run's timeline confirms it runs: its id is `{run}/{job}/{attempt}`. Azure derives a job's id
/// from its stage's and its own names, so the same id recurs in every run of a pipeline and in
/// unrelated organisations; the issuer already pins the organisation.
pub fn bind_job(job: &mut Job, named: NamedJob) {
    let run = job.run_id.as_deref().unwrap_or(&job.job_id);
    job.job_id = job_within_run(run, &named);
    job.named_job = Some(named);
}

/// The id of one attempt of a job within a run, `{run}/{job}/{attempt}`: what an exchange that
/// names it is bound to and what its completion hook ends.
pub(super) fn job_within_run(run: &str, named: &NamedJob) -> String {
    format!("{run}/{}/{}", named.id, named.attempt)
}
