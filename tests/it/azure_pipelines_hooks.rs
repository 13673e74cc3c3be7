//! Azure DevOps service hooks the broker does not act on, end to end: each authenticated one is
//! answered 2xx and audited as ignored with its reason, so the subscription is never put on
//! probation; a job event without its attempt or run id (as in Microsoft's own sample) still ends
//! the job; unauthenticated deliveries are refused as before.

use std::time::Duration;

use serde_json::{Value, json};

use crate::azure_pipelines::{events, exchange, exchange_job, job_id, stack};
use crate::support::azure_devops::{
    AzureDevOps, HOOK_CREDENTIALS, JOB, ORG, RUN, Run, SIBLING, TimelineJob, hook_headers, job_state_changed,
    run_state_changed,
};
use crate::support::stack::Stack;

const HOOKS: &str = "/v1/webhooks/azure_pipelines";

fn delivery_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn edited(body: Vec<u8>, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut delivery: Value = serde_json::from_slice(&body).unwrap();
    edit(&mut delivery);
    serde_json::to_vec(&delivery).unwrap()
}

fn remove(value: &mut Value, field: &str) {
    value.as_object_mut().unwrap().remove(field);
}

/// Exchanges a token of `run` for `azure-read`, naming attempt 1 of `job` if given: the Vault
/// token's accessor.
async fn accessor(stack: &Stack, azure: &AzureDevOps, run: u64, job: Option<&str>) -> String {
    let token = azure.token(ORG, run, |_| {});
    let (status, answer) = match job {
        Some(job) => exchange_job(stack, &token, &["azure-read"], job, 1).await,
        None => exchange(stack, &token, &["azure-read"]).await,
    };
    assert_eq!(status, 200, "{answer}");
    answer["credentials"][0]["vault"]["accessor"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_hooks_the_broker_cannot_use_are_acknowledged_and_audited() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, &azure.webhook_config("azure")).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let run_accessor = accessor(&stack, &azure, RUN, None).await;
    let deliver = |credentials: Option<&'static str>, body: Vec<u8>| {
        let headers = hook_headers(credentials);
        let stack = &stack;
        async move { stack.broker.post(HOOKS, &headers, body).await }
    };

    let completed = run_state_changed(RUN, "completed", &delivery_id());
    let cases = [
        (edited(completed.clone(), |d| d["eventType"] = json!("build.complete")), "event `build.complete`"),
        (edited(completed.clone(), |d| d["resource"]["run"] = Value::Null), "`resource.run` is null"),
        (edited(completed.clone(), |d| remove(&mut d["resource"], "run")), "`resource.run` is null"),
        (edited(job_state_changed(RUN, &delivery_id()), |d| d["resource"]["job"] = Value::Null), "`resource.job`"),
        (
            edited(job_state_changed(RUN, &delivery_id()), |d| d["resource"]["job"]["id"] = json!("__default")),
            "must be a GUID",
        ),
        (edited(completed.clone(), |d| d["resource"]["run"]["id"] = json!("4711")), "does not parse"),
        (b"not json".to_vec(), "does not parse"),
    ];
    for (body, reason) in &cases {
        // Without the subscription's credentials: refused, nothing read.
        let (status, _) = deliver(None, body.clone()).await;
        assert_eq!(status, 401, "{reason}");
        let (status, answer) = deliver(Some(HOOK_CREDENTIALS), body.clone()).await;
        assert_eq!((status, &answer["status"]), (202, &json!("ignored")), "{reason}: {answer}");
        assert!(answer["reason"].as_str().unwrap().contains(reason), "{reason}: {answer}");
    }
    let ignored = events(&stack, "webhook.ignored");
    assert_eq!(ignored.len(), cases.len(), "each acknowledged delivery is audited: {ignored:?}");
    for ((_, reason), event) in cases.iter().zip(&ignored) {
        assert_eq!(
            (&event["ci"], &event["webhook"]),
            (&json!("azure_pipelines"), &json!("azure_pipelines")),
            "{event}"
        );
        assert!(event["reason"].as_str().unwrap().contains(reason), "{reason}: {event}");
    }
    assert_eq!(events(&stack, "webhook.refused").len(), cases.len(), "each unauthenticated one is refused");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(stack.bao.accessor_alive(&run_accessor).await, "nothing above ended the run");
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    let counted = format!(
        r#"ci_creds_webhook_deliveries_total{{ci="azure_pipelines",webhook="azure_pipelines",outcome="ignored"}} {}"#,
        cases.len()
    );
    assert!(metrics.lines().any(|line| line == counted), "{metrics}");

    // A run the broker never saw completes: acknowledged, and remembered as ended.
    let (status, answer) = deliver(Some(HOOK_CREDENTIALS), run_state_changed(4799, "completed", &delivery_id())).await;
    assert_eq!((status, answer), (200, json!({ "job_id": "4799", "revoked": 0 })));
    azure.set_run(ORG, 4799, Run::InProgress);
    let (status, _) = exchange(&stack, &azure.token(ORG, 4799, |_| {}), &["azure-read"]).await;
    assert_eq!(status, 409, "a token of the ended run gets nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_job_hook_without_attempt_or_run_id_still_ends_the_job() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, &azure.webhook_config("azure")).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    azure.set_job(ORG, RUN, TimelineJob::new(SIBLING, "inProgress", Some("Azure Pipelines 2")));
    let job = accessor(&stack, &azure, RUN, Some(JOB)).await;
    let sibling = accessor(&stack, &azure, RUN, Some(SIBLING)).await;
    let run = accessor(&stack, &azure, RUN, None).await;
    let headers = hook_headers(Some(HOOK_CREDENTIALS));

    // Microsoft's sample shape: no `attempt`, no `run.id`, no `run.url`; the job's web link names
    // the run (`buildId=4711`). The job ends, each attempt of it the broker knows.
    let sample = edited(job_state_changed(RUN, &delivery_id()), |d| {
        remove(&mut d["resource"]["job"], "attempt");
        remove(&mut d["resource"]["run"], "id");
        remove(&mut d["resource"]["run"], "url");
    });
    let (status, answer) = stack.broker.post(HOOKS, &headers, sample).await;
    assert_eq!((status, &answer["revoked"]), (200, &json!(1)), "{answer}");
    stack.until_revoked(std::slice::from_ref(&job), Duration::from_secs(5)).await;
    assert!(stack.bao.accessor_alive(&sibling).await, "the run's other job goes on");
    assert!(stack.bao.accessor_alive(&run).await, "the run goes on");
    let ended: Vec<Value> = events(&stack, "job.ended").into_iter().map(|e| e["job"]["job_id"].clone()).collect();
    assert!(ended.contains(&json!(job_id(RUN, JOB, 1))), "{ended:?}");

    // With its attempt but without `run.id`: the run's URL names it.
    let no_run_id = edited(job_state_changed(RUN, &delivery_id()), |d| {
        d["resource"]["job"]["id"] = json!(SIBLING);
        remove(&mut d["resource"]["run"], "id");
    });
    let (status, answer) = stack.broker.post(HOOKS, &headers, no_run_id).await;
    assert_eq!((status, answer), (200, json!({ "job_id": job_id(RUN, SIBLING, 1), "revoked": 1 })));
    stack.until_revoked(std::slice::from_ref(&sibling), Duration::from_secs(5)).await;
    assert!(stack.bao.accessor_alive(&run).await, "the run goes on");
}
