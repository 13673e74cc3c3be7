//! A run asked about as a whole (the exchange named no job): the build's pool is the run's
//! default, so it is every job's only when the timeline puts every job on the run's queue; and a
//! run being cancelled gets nothing.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::NamedJob;
use crate::ci::test_support::fixture;
use crate::ci::{JobLocator, JobReport, Liveness};

const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";
const OTHER_JOB: &str = "3dc8fd7e-4368-5a92-293e-d53cefc8c4c3";
/// The build answers' `queue.id`, and the fixture job record's `queueId`.
const RUN_QUEUE: u64 = 4799;

fn located(job: Option<NamedJob>) -> JobLocator {
    let claims: Value = serde_json::from_slice(&fixture("azure-pipelines-token-claims.json")).unwrap();
    let mut mapped = CiKind::AzurePipelines.ci().job(&Issuer::named("azure"), &claims).unwrap();
    mapped.claims = claims.as_object().cloned().unwrap();
    if let Some(job) = job {
        (CiKind::AzurePipelines.ci().job_in_run.as_ref().unwrap().bind)(&mut mapped, job);
    }
    JobLocator::of(&mapped).unwrap()
}

/// The fixture's timeline, its job record edited by `edit`, and `more` job records after it.
fn timeline(edit: impl FnOnce(&mut Value), more: &[(&str, Value)]) -> Vec<u8> {
    let mut answer: Value = serde_json::from_slice(&fixture("azure-pipelines-api-timeline.json")).unwrap();
    edit(&mut answer["records"][2]);
    let template = answer["records"][2].clone();
    for (id, queue) in more {
        let mut record = template.clone();
        record["id"] = json!(id);
        record["queueId"] = queue.clone();
        answer["records"].as_array_mut().unwrap().push(record);
    }
    serde_json::to_vec(&answer).unwrap()
}

/// The in-progress build on a self-hosted pool: its own name, so its facts are told apart.
fn build(status: &str) -> Vec<u8> {
    let mut answer: Value = serde_json::from_slice(&fixture("azure-pipelines-api-build-inprogress.json")).unwrap();
    answer["status"] = json!(status);
    answer["queue"]["pool"] = json!({ "id": 9, "name": "linux-pool", "isHosted": false });
    serde_json::to_vec(&answer).unwrap()
}

fn read_run(build: &[u8], timeline: &[u8]) -> JobReport {
    CiKind::AzurePipelines.ci().api.unwrap().read_answers(&located(None), build, timeline).unwrap()
}

#[test]
fn a_run_s_pool_is_known_when_every_job_record_is_on_the_run_s_queue() {
    let all_on_it = read_run(&build("inProgress"), &timeline(|_| {}, &[(OTHER_JOB, json!(RUN_QUEUE))]));
    assert_eq!((all_on_it.liveness, all_on_it.status.as_str()), (Liveness::Running, "inProgress"));
    let pool = all_on_it.runner.unwrap();
    assert_eq!(
        (pool.group.as_deref(), pool.environment.as_deref(), pool.runner_type.as_deref(), pool.name),
        (Some("linux-pool"), Some("self-hosted"), Some("self-hosted"), None),
        "a run names no agent"
    );
}

#[test]
fn a_run_with_a_job_elsewhere_has_no_pool_and_says_why() {
    let hosted_run = fixture("azure-pipelines-api-build-inprogress.json");
    for (case, timeline, why) in [
        (
            "a job on another queue",
            timeline(|_| {}, &[(OTHER_JOB, json!(4800))]),
            format!("job {OTHER_JOB} is on queue 4800, not the run's queue 4799"),
        ),
        (
            "a job without a queue (agentless, or not yet queued)",
            timeline(|_| {}, &[(OTHER_JOB, Value::Null)]),
            format!("job {OTHER_JOB} is on no queue"),
        ),
        (
            "its only job elsewhere",
            timeline(|job| job["queueId"] = json!(4800), &[]),
            format!("job {JOB} is on queue 4800"),
        ),
        ("no job yet", br#"{"records": []}"#.to_vec(), "its timeline shows no job".to_owned()),
    ] {
        let report = read_run(&hosted_run, &timeline);
        assert_eq!(report.liveness, Liveness::Running, "{case}: the run goes on");
        assert_eq!(report.runner, None, "{case}: the run's default pool is not every job's");
        assert!(report.status.starts_with("inProgress (its pool is not known"), "{case}: {}", report.status);
        assert!(report.status.contains(&why), "{case}: {}", report.status);
    }
    let mut no_queue: Value = serde_json::from_slice(&hosted_run).unwrap();
    no_queue["queue"] = Value::Null;
    let report = read_run(&serde_json::to_vec(&no_queue).unwrap(), &timeline(|_| {}, &[]));
    assert_eq!(report.runner, None);
    assert!(report.status.contains("the build answer names no queue"), "{}", report.status);
}

#[test]
fn a_run_whose_timeline_cannot_be_had_goes_on_without_its_pool() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let read = api.read_without_inner(&located(None), &build("inProgress"), "HTTP 500").unwrap().unwrap();
    assert_eq!((read.liveness, read.runner), (Liveness::Running, None));
    assert!(read.status.contains("the run's timeline could not be read: HTTP 500"), "{}", read.status);
    let completed = fixture("azure-pipelines-api-build-completed.json");
    let ended = api.read_without_inner(&located(None), &completed, "too large").unwrap().unwrap();
    assert_eq!(ended.liveness, Liveness::Finished);
    // A named job is unknown without its record.
    let job = located(Some(NamedJob::new(JOB, 1).unwrap()));
    assert!(api.read_without_inner(&job, &build("inProgress"), "HTTP 500").is_none());
    // The timeline does not make another run's build readable.
    let mut other: Value = serde_json::from_slice(&build("inProgress")).unwrap();
    other["id"] = json!(4712);
    let other = serde_json::to_vec(&other).unwrap();
    assert!(api.read_without_inner(&located(None), &other, "HTTP 500").unwrap().is_err());
    assert!(api.read_answers(&located(None), &other, &timeline(|_| {}, &[])).is_err());
}

#[test]
fn a_run_being_cancelled_settles_nothing_for_it_or_its_jobs() {
    let api = CiKind::AzurePipelines.ci().api.unwrap();
    let cancelling = build("cancelling");
    let run = read_run(&cancelling, &timeline(|_| {}, &[]));
    assert_eq!(run.liveness, Liveness::Unknown);
    let job = located(Some(NamedJob::new(JOB, 1).unwrap()));
    let still_running = api.read_answers(&job, &cancelling, &timeline(|_| {}, &[])).unwrap();
    assert_eq!((still_running.liveness, still_running.status.as_str()), (Liveness::Unknown, "cancelling"));
    assert_eq!(api.read_answer(&located(None), &cancelling).unwrap().liveness, Liveness::Unknown);
}
