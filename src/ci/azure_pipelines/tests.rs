//! Azure Pipelines' claims, service hooks and build answers as the broker reads them, from the
//! fixtures of run 4711 of pipeline 12.

use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::api::headers;
use crate::ci::test_support::{basic_auth, fixture};
use crate::ci::{ClaimsError, Issuer, JobLocator, Liveness, Verdict, WebhookError};
use crate::ci::{NamedJob, RunnerKey};

/// Job `Compile` of stage `Build`: its record in the run's timeline and its hook's `job.id`.
const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";

fn claims() -> Value {
    serde_json::from_slice(&fixture("azure-pipelines-token-claims.json")).unwrap()
}

fn map(claims: &Value) -> Result<crate::ci::Job, ClaimsError> {
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
fn a_completed_run_ends_the_run_and_the_jobs_within_it() {
    let run = fixture("azure-pipelines-hook-run-completed.json");
    let ended = hook(Some("hooks:s3cret"), &run).unwrap();
    let delivery = Some("ba014e22-af75-4e06-925c-60c05002186a".to_owned());
    assert_eq!(ended, Verdict::End { job_id: "4711".into(), delivery_id: delivery, runner: None, jobs_within: true });
    let mut running: Value = serde_json::from_slice(&run).unwrap();
    running["resource"]["run"]["state"] = json!("inProgress");
    assert!(matches!(hook(Some("hooks:s3cret"), &serde_json::to_vec(&running).unwrap()), Ok(Verdict::Ignore(_))));
    for wrong in [Some("hooks:s3cre"), Some("other:s3cret"), None] {
        assert_eq!(hook(wrong, &run), Err(WebhookError::InvalidSignature), "{wrong:?}");
    }
}

#[test]
fn a_completed_job_ends_that_attempt_of_the_job_in_its_run() {
    let job = fixture("azure-pipelines-hook-job-completed.json");
    let ended = hook(Some("hooks:s3cret"), &job).unwrap();
    assert_eq!(
        ended,
        Verdict::End {
            job_id: format!("4711/{JOB}/1"),
            delivery_id: Some("e194adbc-3941-4e27-9f8c-c9e6bddfcaae".into()),
            runner: None,
            jobs_within: false,
        }
    );
    let mut delivery: Value = serde_json::from_slice(&job).unwrap();
    delivery["resource"]["job"]["id"] = json!(JOB.to_uppercase());
    delivery["resource"]["job"]["attempt"] = json!(2);
    let Ok(Verdict::End { job_id, .. }) = hook(Some("hooks:s3cret"), &serde_json::to_vec(&delivery).unwrap()) else {
        panic!("not ended")
    };
    assert_eq!(job_id, format!("4711/{JOB}/2"), "ids are kept lowercase, as the job names itself");
    delivery["resource"]["job"]["state"] = json!("inProgress");
    assert!(matches!(hook(Some("hooks:s3cret"), &serde_json::to_vec(&delivery).unwrap()), Ok(Verdict::Ignore(_))));
    assert_eq!(hook(None, &job), Err(WebhookError::InvalidSignature));
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
    assert_eq!(running.runner, None, "the build's pool is the run's default, not a job's");
    let completed = api.read_answer(&locator, &fixture("azure-pipelines-api-build-completed.json")).unwrap();
    assert_eq!(completed.liveness, Liveness::Finished);

    let mut answer: Value = serde_json::from_slice(&fixture("azure-pipelines-api-build-inprogress.json")).unwrap();
    for status in ["notStarted", "postponed", "cancelling", "none"] {
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

fn located_job(attempt: u32) -> JobLocator {
    let mut job = map(&claims()).unwrap();
    job.claims = claims().as_object().cloned().unwrap();
    (CiKind::AzurePipelines.ci().job_in_run.as_ref().unwrap().bind)(&mut job, NamedJob::new(JOB, attempt).unwrap());
    assert_eq!(job.job_id, format!("4711/{JOB}/{attempt}"));
    assert_eq!(job.runner_key_by, RunnerKey::GroupAndName);
    JobLocator::of(&job).unwrap()
}

fn timeline(change: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut answer: Value = serde_json::from_slice(&fixture("azure-pipelines-api-timeline.json")).unwrap();
    change(&mut answer["records"][2]);
    serde_json::to_vec(&answer).unwrap()
}

#[test]
fn a_named_job_is_asked_about_in_the_run_s_timeline_after_its_build() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let locator = located_job(1);
    let prefix = "/271ef6f7-5998-4b0f-86fb-4b54d9129990/_apis/build/builds/4711";
    assert_eq!(locator.path().unwrap(), format!("{prefix}?api-version=7.1"));
    assert_eq!(api.inner_path(&locator).unwrap(), format!("{prefix}/timeline?api-version=7.1"));
    assert_eq!(api.inner_path(&located()).unwrap(), format!("{prefix}/timeline?api-version=7.1"), "a run's too");
    assert!(located().holds_jobs() && !locator.holds_jobs(), "a run's end is its jobs', not a job's");
    let build = fixture("azure-pipelines-api-build-inprogress.json");
    let running = api.read_answers(&locator, &build, &fixture("azure-pipelines-api-timeline.json")).unwrap();
    assert_eq!((running.liveness, running.status.as_str()), (Liveness::Running, "inProgress"));
    let agent = running.runner.unwrap();
    assert_eq!(agent.name.as_deref(), Some("Azure Pipelines 1"));
    assert_eq!((agent.group.as_deref(), agent.runner_type.as_deref()), (Some("Azure Pipelines"), Some("hosted")));
    assert_eq!(agent.source, "ci_api");
}

#[test]
fn a_pool_s_hosted_ness_is_the_runner_s_environment_and_type() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let mut answer: Value = serde_json::from_slice(&fixture("azure-pipelines-api-build-inprogress.json")).unwrap();
    for (hosted, environment, runner_type) in
        [(true, "microsoft-hosted", "hosted"), (false, "self-hosted", "self-hosted")]
    {
        answer["queue"]["pool"] = json!({ "id": 9, "name": "linux-pool", "isHosted": hosted });
        let build = serde_json::to_vec(&answer).unwrap();
        let run = api.read_answers(&located(), &build, &fixture("azure-pipelines-api-timeline.json"));
        let run = run.unwrap().runner.unwrap();
        let job = api.read_answers(&located_job(1), &build, &fixture("azure-pipelines-api-timeline.json"));
        let job = job.unwrap().runner.unwrap();
        for facts in [run, job] {
            assert_eq!(
                (facts.group.as_deref(), facts.environment.as_deref(), facts.runner_type.as_deref()),
                (Some("linux-pool"), Some(environment), Some(runner_type)),
                "hosted: {hosted}"
            );
            let runner = facts.to_runner();
            assert_eq!(runner.environment.map(|fact| fact.source), Some(crate::ci::FactSource::CiApi));
        }
    }
    // `isHosted` absent reads as false, as `runner_type` always has: Microsoft's own pools carry
    // `isHosted: true`.
    answer["queue"]["pool"] = json!({ "id": 9, "name": "linux-pool" });
    let build = serde_json::to_vec(&answer).unwrap();
    let run = api.read_answers(&located(), &build, &fixture("azure-pipelines-api-timeline.json")).unwrap();
    let run = run.runner.unwrap();
    assert_eq!(run.environment.as_deref(), Some("self-hosted"));
}

#[test]
fn the_job_record_says_whether_that_attempt_runs() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let build = fixture("azure-pipelines-api-build-inprogress.json");
    let read = |locator: &JobLocator, timeline: &[u8]| api.read_answers(locator, &build, timeline).unwrap().liveness;
    let first = located_job(1);
    for (state, liveness) in [
        ("inProgress", Liveness::Running),
        ("completed", Liveness::Finished),
        ("pending", Liveness::Unknown),
        ("cancelling", Liveness::Unknown),
    ] {
        assert_eq!(read(&first, &timeline(|job| job["state"] = json!(state))), liveness, "{state}");
    }
    assert_eq!(read(&first, &timeline(|job| job["state"] = Value::Null)), Liveness::Unknown);
    assert_eq!(read(&first, &timeline(|job| job["id"] = json!(JOB.to_uppercase()))), Liveness::Running);
    // Another job, or a stage or phase with the job's id, is not the job's record.
    assert_eq!(
        read(&first, &timeline(|job| job["id"] = json!("12f1170f-54f2-53f3-20dd-22fc7dff55f9"))),
        Liveness::Unknown
    );
    assert_eq!(read(&first, &timeline(|job| job["type"] = json!("Phase"))), Liveness::Unknown);
    // A later attempt replaced the first; the second is not running yet while the first is.
    assert_eq!(read(&first, &timeline(|job| job["attempt"] = json!(2))), Liveness::Finished);
    assert_eq!(read(&located_job(2), &fixture("azure-pipelines-api-timeline.json")), Liveness::Unknown);
    // The run's end is every job's.
    let completed = fixture("azure-pipelines-api-build-completed.json");
    let report = api.read_answers(&first, &completed, &fixture("azure-pipelines-api-timeline.json")).unwrap();
    assert_eq!(report.liveness, Liveness::Finished);
    let absent = api.read_answers(&first, &completed, br#"{"records": []}"#).unwrap();
    assert_eq!(absent.liveness, Liveness::Finished);
}

#[test]
fn the_pool_is_the_job_s_only_where_its_queue_is_the_run_s() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let build = fixture("azure-pipelines-api-build-inprogress.json");
    let locator = located_job(1);
    for other in [json!(4800), Value::Null] {
        let report = api.read_answers(&locator, &build, &timeline(|job| job["queueId"] = other.clone())).unwrap();
        let agent = report.runner.unwrap();
        assert_eq!(
            (agent.name.as_deref(), agent.group, agent.runner_type, agent.environment),
            (Some("Azure Pipelines 1"), None, None, None)
        );
    }
    let no_agent = api.read_answers(&locator, &build, &timeline(|job| job["workerName"] = Value::Null)).unwrap();
    assert_eq!(no_agent.runner.unwrap().name, None);
    let long = api.read_answers(&locator, &build, &timeline(|job| job["workerName"] = json!("a\n".repeat(300))));
    assert_eq!(long.unwrap().runner.unwrap().name.unwrap().chars().count(), 256, "bounded, controls dropped");
}

#[test]
fn an_unreadable_timeline_or_another_run_s_build_is_an_error() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let build = fixture("azure-pipelines-api-build-inprogress.json");
    let locator = located_job(1);
    for wrong in [&b"<html>"[..], br#"{"value": []}"#, br#"{"records": [{"type": "Job"}]}"#] {
        assert!(api.read_answers(&locator, &build, wrong).is_err(), "{}", String::from_utf8_lossy(wrong));
    }
    let wrong_attempt = timeline(|job| job["attempt"] = json!("1"));
    assert!(api.read_answers(&locator, &build, &wrong_attempt).is_err());
    let mut other: Value = serde_json::from_slice(&build).unwrap();
    other["id"] = json!(4712);
    let other = serde_json::to_vec(&other).unwrap();
    assert!(api.read_answers(&locator, &other, &fixture("azure-pipelines-api-timeline.json")).is_err());
}

#[test]
fn a_stored_run_locator_reads_back_and_a_job_locator_keeps_its_job() {
    let stored = r#"{"ci":"azure_pipelines","project":"271ef6f7-5998-4b0f-86fb-4b54d9129990","run_id":4711}"#;
    assert_eq!(JobLocator::from_json(stored), Some(located()));
    assert_eq!(located().to_json(), stored, "a run's locator is written as before");
    let job = located_job(3);
    assert_eq!(JobLocator::from_json(&job.to_json()), Some(job.clone()));
    assert!(job.to_json().ends_with(&format!(r#""job":{{"id":"{JOB}","attempt":3}}}}"#)), "{}", job.to_json());
    let forged = stored.replace("4711}", r#"4711,"job":{"id":"../x","attempt":1}}"#);
    assert_eq!(JobLocator::from_json(&forged), None, "a stored job is checked as a sent one");
}
