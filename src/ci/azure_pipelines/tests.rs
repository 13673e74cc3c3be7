//! Azure Pipelines' claims, service hooks and build answers as the broker reads them, from the
//! fixtures of run 4711 of pipeline 12.

use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::api::headers;
use crate::ci::test_support::{basic_auth, fixture};
use crate::ci::{ClaimsError, Issuer, JobLocator, Liveness, Verdict, WebhookError};
use crate::job::CiKind;

fn claims() -> Value {
    serde_json::from_slice(&fixture("azure-pipelines-token-claims.json")).unwrap()
}

fn map(claims: &Value) -> Result<crate::job::Job, ClaimsError> {
    CiKind::AzurePipelines.ci().job(&Issuer::named("azure"), claims)
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

fn hook(credentials: Option<&str>, body: &[u8]) -> Result<Verdict, WebhookError> {
    CiKind::AzurePipelines.ci().read_webhook(&basic_auth(credentials), body, &SecretString::from("hooks:s3cret"))
}

#[test]
fn a_completed_run_ends_its_credentials_and_a_job_event_ends_nothing() {
    let run = fixture("azure-pipelines-hook-run-completed.json");
    let ended = hook(Some("hooks:s3cret"), &run).unwrap();
    let delivery = Some("ba014e22-af75-4e06-925c-60c05002186a".to_owned());
    assert_eq!(ended, Verdict::End { job_id: "4711".into(), delivery_id: delivery, runner: None });
    let job = fixture("azure-pipelines-hook-job-completed.json");
    assert!(matches!(hook(Some("hooks:s3cret"), &job), Ok(Verdict::Ignore(_))));
    let mut running: Value = serde_json::from_slice(&run).unwrap();
    running["resource"]["run"]["state"] = json!("inProgress");
    assert!(matches!(hook(Some("hooks:s3cret"), &serde_json::to_vec(&running).unwrap()), Ok(Verdict::Ignore(_))));
    for wrong in [Some("hooks:s3cre"), Some("other:s3cret"), None] {
        assert_eq!(hook(wrong, &run), Err(WebhookError::InvalidSignature), "{wrong:?}");
    }
}

fn located() -> JobLocator {
    let mut job = map(&claims()).unwrap();
    job.claims = claims().as_object().cloned().unwrap();
    JobLocator::of(&job).unwrap()
}

#[test]
fn the_build_answer_says_whether_the_run_goes_on() {
    let locator = located();
    assert_eq!(
        locator.path().as_deref(),
        Some("/271ef6f7-5998-4b0f-86fb-4b54d9129990/_apis/build/builds/4711?api-version=7.1")
    );
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let running = api.read_answer(&locator, &fixture("azure-pipelines-api-build-inprogress.json")).unwrap();
    assert_eq!(running.liveness, Liveness::Running);
    let pool = running.runner.unwrap();
    assert_eq!((pool.group.as_deref(), pool.runner_type.as_deref()), (Some("Azure Pipelines"), Some("hosted")));
    let completed = api.read_answer(&locator, &fixture("azure-pipelines-api-build-completed.json")).unwrap();
    assert_eq!(completed.liveness, Liveness::Finished);

    let mut answer: Value = serde_json::from_slice(&fixture("azure-pipelines-api-build-inprogress.json")).unwrap();
    for status in ["notStarted", "postponed", "none"] {
        answer["status"] = json!(status);
        let report = api.read_answer(&locator, &serde_json::to_vec(&answer).unwrap()).unwrap();
        assert_eq!(report.liveness, Liveness::Unknown, "{status}");
    }
    answer["id"] = json!(4712);
    assert!(api.read_answer(&locator, &serde_json::to_vec(&answer).unwrap()).is_err(), "another run");
    answer["id"] = json!(4711);
    answer["project"]["id"] = json!("another-project");
    assert!(api.read_answer(&locator, &serde_json::to_vec(&answer).unwrap()).is_err(), "another project");
}

#[test]
fn the_rate_limit_headers_pause_until_the_reset() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let exhausted = headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000030")]);
    assert_eq!(api.rate_limit_pause(429, &exhausted, 1_800_000_000), Some(std::time::Duration::from_secs(30)));
    let left = headers(&[("x-ratelimit-remaining", "12"), ("x-ratelimit-reset", "1800000030")]);
    assert_eq!(api.rate_limit_pause(200, &left, 1_800_000_000), None);
}
