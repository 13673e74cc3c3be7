//! Service hooks that end a run, or one attempt of a job within it.

use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::{basic_auth, fixture};
use crate::ci::{Verdict, WebhookError};

use super::JOB;

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
