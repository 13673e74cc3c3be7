//! The build API: the run's answer, its rate-limit headers, and its locator as stored.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::api::headers;
use crate::ci::test_support::fixture;
use crate::ci::{JobLocator, Liveness};

use super::{JOB, located, located_job};

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
