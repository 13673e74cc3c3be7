//! Azure Pipelines' claims, service hooks and build answers as the broker reads them, from the
//! fixtures of run 4711 of pipeline 12. Here its claims; beside, one file a concern.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::fixture;
use crate::ci::{ClaimsError, Issuer, JobLocator, NamedJob, RunnerKey};

mod api;
mod hook_reasons;
mod hooks;
mod run_pool;
mod timeline;

/// Job `Compile` of stage `Build`: its record in the run's timeline and its hook's `job.id`.
const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";

fn claims() -> Value {
    serde_json::from_slice(&fixture("azure-pipelines-token-claims.json")).unwrap()
}

fn map(claims: &Value) -> Result<crate::ci::Job, ClaimsError> {
    CiKind::AzurePipelines.ci().job(&Issuer::named("azure"), claims)
}

fn located() -> JobLocator {
    let mut job = map(&claims()).unwrap();
    job.claims = claims().as_object().cloned().unwrap();
    JobLocator::of(&job).unwrap()
}

fn located_job(attempt: u32) -> JobLocator {
    let mut job = map(&claims()).unwrap();
    job.claims = claims().as_object().cloned().unwrap();
    (CiKind::AzurePipelines.ci().job_in_run.as_ref().unwrap().bind)(&mut job, NamedJob::new(JOB, attempt).unwrap());
    assert_eq!(job.job_id, format!("4711/{JOB}/{attempt}"));
    assert_eq!(job.runner_key_by, RunnerKey::GroupAndName);
    JobLocator::of(&job).unwrap()
}

#[test]
fn a_pipeline_token_is_its_run_in_its_repository_on_its_ref() {
    let job = map(&claims()).unwrap();
    assert_eq!((job.job_id.as_str(), job.run_id.as_deref()), ("4711", Some("4711")));
    assert_eq!(job.repository, "octo-org/octo-repo");
    assert_eq!(job.owner_id.as_deref(), Some("0ca3ddd9-f0b0-4635-a98c-5866526961b6"));
    assert_eq!((job.git_ref.as_deref(), job.ref_type.as_deref()), (Some("refs/heads/main"), Some("branch")));
    assert_eq!(job.event, None);
    let mut pull_request = claims();
    pull_request["rpo_ref"] = json!("refs/pull/7/merge");
    let job = map(&pull_request).unwrap();
    assert_eq!((job.event.as_deref(), job.ref_type), (Some("pull_request"), None));
}

#[test]
fn a_token_whose_organisation_is_not_the_issuer_s_is_refused() {
    let mut other = claims();
    other["org_id"] = json!("11111111-2222-3333-4444-555555555555");
    assert!(matches!(map(&other), Err(ClaimsError::Refused(_))));
    for (claim, value) in [("run_id", json!(4711)), ("run_id", json!("47a")), ("def_id", json!(12))] {
        let mut wrong = claims();
        wrong[claim] = value.clone();
        assert!(matches!(map(&wrong), Err(ClaimsError::WrongType(_))), "{claim} {value}");
    }
    for claim in ["org_id", "prj_id", "def_id", "rpo_id", "run_id"] {
        let mut missing = claims();
        missing.as_object_mut().unwrap().remove(claim);
        assert!(matches!(map(&missing), Err(ClaimsError::Missing(_))), "{claim}");
    }
}
