//! A job the exchange names, asked about in its run's timeline after its build.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::fixture;
use crate::ci::{JobLocator, Liveness};

use super::{JOB, located, located_job};

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
