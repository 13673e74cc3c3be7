//! Service hook deliveries the broker cannot act on are acknowledged (ignored, with the reason),
//! never refused: Azure DevOps puts a subscription answered 400 on probation. Only deliveries
//! without the subscription's credentials are refused.

use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::{basic_auth, fixture};
use crate::ci::{Verdict, WebhookError};

const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";
const CREDENTIALS: &str = "hooks:s3cret";

fn hook(credentials: Option<&str>, body: &[u8]) -> Result<Verdict, WebhookError> {
    CiKind::AzurePipelines.ci().read_webhook(&basic_auth(credentials), body, &SecretString::from(CREDENTIALS))
}

fn edited(name: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut delivery: Value = serde_json::from_slice(&fixture(name)).unwrap();
    edit(&mut delivery);
    serde_json::to_vec(&delivery).unwrap()
}

fn job_event(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    edited("azure-pipelines-hook-job-completed.json", edit)
}

fn remove(value: &mut Value, field: &str) {
    value.as_object_mut().unwrap().remove(field);
}

/// The reason a delivery was ignored; panics on any other verdict.
fn ignored(body: &[u8]) -> String {
    match hook(Some(CREDENTIALS), body) {
        Ok(Verdict::Ignore(reason)) => reason,
        other => panic!("not ignored: {other:?}"),
    }
}

#[test]
fn an_authenticated_delivery_the_broker_cannot_use_is_acknowledged_with_the_reason() {
    let run = |edit: fn(&mut Value)| edited("azure-pipelines-hook-run-completed.json", edit);
    for (body, reason) in [
        (run(|d| d["resource"]["run"] = Value::Null), "`resource.run` is null"),
        (run(|d| remove(&mut d["resource"], "run")), "`resource.run` is null"),
        (run(|d| d["resource"] = Value::Null), "`resource.run` is null"),
        (run(|d| d["eventType"] = json!("build.complete")), "event `build.complete` ends neither"),
        (run(|d| d["resource"]["run"]["id"] = json!("4711")), "the delivery does not parse"),
        (b"<html>".to_vec(), "the delivery does not parse"),
        (job_event(|d| d["resource"]["job"] = Value::Null), "`resource.job` is null"),
        (job_event(|d| d["resource"]["job"]["id"] = json!("__default")), "must be a GUID"),
        (job_event(|d| d["resource"]["job"]["id"] = json!(7)), "the delivery does not parse"),
        (job_event(|d| d["resource"]["job"]["attempt"] = json!(0)), "`job.attempt` must be 1 to 1000"),
        (job_event(|d| d["resource"]["job"]["attempt"] = json!("1")), "the delivery does not parse"),
        (job_event(|d| d["resource"]["job"]["state"] = json!("inProgress")), "the job is inProgress, not completed"),
    ] {
        let reason_given = ignored(&body);
        assert!(reason_given.contains(reason), "{reason}: {reason_given}");
        // Refused without the subscription's credentials, whatever the body.
        assert_eq!(hook(None, &body), Err(WebhookError::InvalidSignature), "{reason}");
        assert_eq!(hook(Some("hooks:wrong"), &body), Err(WebhookError::InvalidSignature), "{reason}");
    }
}

#[test]
fn a_job_event_without_its_run_id_takes_it_from_the_resource_s_urls() {
    let expected = |job_id: String| Verdict::End {
        job_id,
        delivery_id: Some("e194adbc-3941-4e27-9f8c-c9e6bddfcaae".into()),
        runner: None,
        jobs_within: false,
    };
    // The captured payload's `run.url` (`…/_apis/pipelines/12/runs/4711`).
    let no_id = job_event(|d| remove(&mut d["resource"]["run"], "id"));
    assert_eq!(hook(Some(CREDENTIALS), &no_id).unwrap(), expected(format!("4711/{JOB}/1")));
    // Microsoft's sample has no `run.url`; its job's web link names the run (`buildId=`).
    let sample = job_event(|d| {
        remove(&mut d["resource"]["run"], "id");
        remove(&mut d["resource"]["run"], "url");
    });
    assert_eq!(hook(Some(CREDENTIALS), &sample).unwrap(), expected(format!("4711/{JOB}/1")));
    let no_run = job_event(|d| d["resource"]["run"] = Value::Null);
    assert_eq!(hook(Some(CREDENTIALS), &no_run).unwrap(), expected(format!("4711/{JOB}/1")));
    // A URL that names no run is no run id: acknowledged, unused.
    let nowhere = job_event(|d| {
        d["resource"]["run"] = Value::Null;
        d["resource"]["job"]["_links"]["web"]["href"] =
            json!("https://dev.azure.com/octo-org/_build/results?build=4711");
    });
    assert!(ignored(&nowhere).contains("no run id"));
    let not_runs = job_event(|d| {
        d["resource"]["run"] = json!({ "url": "https://dev.azure.com/octo-org/p/_apis/pipelines/12/4711" });
        remove(&mut d["resource"]["job"], "_links");
    });
    assert!(ignored(&not_runs).contains("no run id"));
}

#[test]
fn a_job_event_without_its_attempt_ends_every_attempt_of_the_job() {
    // Microsoft's sample names no attempt: the job is ended whole, each attempt the broker knows.
    let no_attempt = job_event(|d| remove(&mut d["resource"]["job"], "attempt"));
    assert_eq!(
        hook(Some(CREDENTIALS), &no_attempt).unwrap(),
        Verdict::End {
            job_id: format!("4711/{JOB}"),
            delivery_id: Some("e194adbc-3941-4e27-9f8c-c9e6bddfcaae".into()),
            runner: None,
            jobs_within: true,
        }
    );
    let null_attempt = job_event(|d| d["resource"]["job"]["attempt"] = Value::Null);
    assert!(matches!(hook(Some(CREDENTIALS), &null_attempt), Ok(Verdict::End { jobs_within: true, .. })));
    // The job's id is still checked.
    let not_guid = job_event(|d| {
        remove(&mut d["resource"]["job"], "attempt");
        d["resource"]["job"]["id"] = json!("../x");
    });
    assert!(ignored(&not_guid).contains("must be a GUID"));
}

#[test]
fn a_run_event_without_its_run_id_takes_it_from_the_run_s_url() {
    let no_id = edited("azure-pipelines-hook-run-completed.json", |d| remove(&mut d["resource"]["run"], "id"));
    assert!(matches!(
        hook(Some(CREDENTIALS), &no_id),
        Ok(Verdict::End { job_id, jobs_within: true, .. }) if job_id == "4711"
    ));
    let nothing = edited("azure-pipelines-hook-run-completed.json", |d| {
        remove(&mut d["resource"]["run"], "id");
        remove(&mut d["resource"]["run"], "url");
    });
    assert!(ignored(&nothing).contains("no run id"));
}
