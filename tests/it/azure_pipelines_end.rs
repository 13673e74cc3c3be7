//! How an Azure Pipelines run's and job's ends reach the broker, end to end: service hooks over
//! HTTP Basic (a completed job ends the credentials bound to it, a completed run every credential
//! bound to it or to a job within it), and the build API and the run's timeline asked by the
//! reconciler when no hook came.

use std::time::Duration;

use ci_creds::store::LeaseState;
use serde_json::{Value, json};

use crate::azure_pipelines::{events, exchange, exchange_job, job_id, listed_job, refusal, stack};
use crate::support::azure_devops::{
    AzureDevOps, HOOK_CREDENTIALS, JOB, ORG, RUN, Run, SIBLING, TimelineJob, hook_headers, job_completed,
    job_state_changed, run_state_changed,
};
use crate::support::stack::Stack;

const ROUNDS_EVERY_SECOND: &str = "\n[lifecycle]\nreconcile_interval = \"1s\"\nreconcile_after = \"1s\"\n";
const HOOKS: &str = "/v1/webhooks/azure_pipelines";

/// What OpenBao answers `token` reading the config secret its policy allows.
async fn read_config(stack: &Stack, token: &str) -> u16 {
    stack.bao.request(reqwest::Method::GET, "secret/data/config/app", token, None).await.0
}

/// Exchanges a fresh token of `run` for `azure-read`: its Vault token and accessor.
async fn credentials(stack: &Stack, azure: &AzureDevOps, run: u64) -> (String, String) {
    let (status, answer) = exchange(stack, &azure.token(ORG, run, |_| {}), &["azure-read"]).await;
    assert_eq!(status, 200, "run {run}: {answer}");
    let vault = &answer["credentials"][0]["vault"];
    (vault["token"].as_str().unwrap().to_owned(), vault["accessor"].as_str().unwrap().to_owned())
}

/// Exchanges a fresh token of `run` naming attempt 1 of `job`, for `azure-read`: its Vault token
/// and accessor.
async fn job_credentials(stack: &Stack, azure: &AzureDevOps, run: u64, job: &'static str) -> (String, String) {
    let (status, answer) = exchange_job(stack, &azure.token(ORG, run, |_| {}), &["azure-read"], job, 1).await;
    assert_eq!((status, &answer["job"]["job_id"]), (200, &json!(job_id(run, job, 1))), "{answer}");
    let vault = &answer["credentials"][0]["vault"];
    (vault["token"].as_str().unwrap().to_owned(), vault["accessor"].as_str().unwrap().to_owned())
}

fn delivery_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_run_completed_hook_revokes_the_runs_credentials_only_with_the_credentials() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, &azure.webhook_config("azure")).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    // Two jobs of the run, each with its token; and another run going on.
    let (first, first_accessor) = credentials(&stack, &azure, RUN).await;
    let (second, second_accessor) = credentials(&stack, &azure, RUN).await;
    azure.set_run(ORG, 4740, Run::InProgress);
    let (other, other_accessor) = credentials(&stack, &azure, 4740).await;
    for token in [&first, &second, &other] {
        assert_eq!(read_config(&stack, token).await, 200, "the job's Vault token works");
    }
    let broker = &stack.broker;
    let deliver = |credentials: Option<&str>, body: Vec<u8>| {
        let headers = hook_headers(credentials);
        async move { broker.post(HOOKS, &headers, body).await }
    };

    // A job of the run completed, the run going on: that job ends, holding none of the run's
    // credentials.
    let (status, answer) = deliver(Some(HOOK_CREDENTIALS), job_state_changed(RUN, &delivery_id())).await;
    assert_eq!((status, answer), (200, json!({ "job_id": job_id(RUN, JOB, 1), "revoked": 0 })));
    let (status, answer) = deliver(Some(HOOK_CREDENTIALS), run_state_changed(RUN, "inProgress", &delivery_id())).await;
    assert_eq!((status, &answer["status"]), (202, &json!("ignored")), "{answer}");

    // The run's end with wrong, or without, credentials.
    let (user, password) = HOOK_CREDENTIALS.split_once(':').unwrap();
    for credentials in [Some(format!("{user}:wrong")), Some(format!("someone:{password}")), None] {
        let body = run_state_changed(RUN, "completed", &delivery_id());
        let (status, answer) = deliver(credentials.as_deref(), body).await;
        assert_eq!((status, refusal(&answer).0), (401, Some("invalid_signature")), "{credentials:?}: {answer}");
    }
    let bearer = vec![("authorization", format!("Bearer {HOOK_CREDENTIALS}"))];
    let body = run_state_changed(RUN, "completed", &delivery_id());
    assert_eq!(stack.broker.post(HOOKS, &bearer, body).await.0, 401, "not Basic");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for accessor in [&first_accessor, &second_accessor] {
        assert!(stack.bao.accessor_alive(accessor).await, "nothing above ended the run");
    }
    let ended: Vec<Value> =
        events(&stack, "job.ended").into_iter().map(|event| event["job"]["job_id"].clone()).collect();
    assert_eq!(ended, [json!(job_id(RUN, JOB, 1))], "only the job the job event named");
    let audited = events(&stack, "webhook.refused");
    assert_eq!(audited.len(), 4, "each refused delivery is audited: {audited:?}");
    assert!(audited.iter().all(|event| event["ci"] == "azure_pipelines" && event["reason"] == "invalid_signature"));
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    let refused = r#"ci_creds_webhook_deliveries_total{ci="azure_pipelines",webhook="azure_pipelines",outcome="invalid_signature"} 4"#;
    assert!(metrics.lines().any(|line| line == refused), "{metrics}");

    // The run completed: both jobs' credentials die, the other run's live on.
    let delivery = delivery_id();
    let (status, answer) = deliver(Some(HOOK_CREDENTIALS), run_state_changed(RUN, "completed", &delivery)).await;
    assert_eq!((status, answer), (200, json!({"job_id": "4711", "revoked": 2})));
    stack.until_revoked(&[first_accessor, second_accessor], Duration::from_secs(5)).await;
    for token in [&first, &second] {
        assert_eq!(read_config(&stack, token).await, 403, "OpenBao refuses the dead token");
    }
    assert!(stack.bao.accessor_alive(&other_accessor).await, "another run's credentials live on");
    assert_eq!(read_config(&stack, &other).await, 200);

    // Redelivered: a duplicate.
    let (status, answer) = deliver(Some(HOOK_CREDENTIALS), run_state_changed(RUN, "completed", &delivery)).await;
    assert_eq!((status, &answer["status"]), (202, &json!("duplicate_delivery")), "{answer}");
    let ended = events(&stack, "job.ended");
    assert_eq!(ended.len(), 2, "the job, then the run, each once: {ended:?}");
    assert_eq!(ended[1]["job"]["job_id"], "4711");
    assert_eq!((&ended[1]["ended_by"], &ended[1]["source"]), (&json!("webhook:azure_pipelines"), &json!("webhook")));

    // A fresh token of the ended run, although the API still says it is in progress.
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_run_whose_end_no_hook_brought_is_ended_by_reconciliation() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, ROUNDS_EVERY_SECOND).await;
    azure.set_run(ORG, 4750, Run::InProgress);
    azure.set_run(ORG, 4751, Run::InProgress);
    let (ended, ended_accessor) = credentials(&stack, &azure, 4750).await;
    // A job within the run, which ends with it.
    azure.set_job(ORG, 4750, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (_, job_accessor) = job_credentials(&stack, &azure, 4750, JOB).await;
    let (going_on, going_on_accessor) = credentials(&stack, &azure, 4751).await;
    assert_eq!(read_config(&stack, &ended).await, 200);

    azure.set_run(ORG, 4750, Run::Completed);
    stack.until_revoked(&[ended_accessor.clone(), job_accessor], Duration::from_secs(30)).await;
    assert_eq!(read_config(&stack, &ended).await, 403, "OpenBao refuses the dead token");
    assert_eq!(listed_job(&stack, "4750")["ended_by"], "ci_api:reconcile");
    assert_eq!(listed_job(&stack, &job_id(4750, JOB, 1))["ended_by"], "ci_api:reconcile");
    let ended_events: Vec<Value> = events(&stack, "job.ended");
    let mut sources: Vec<(&Value, &Value)> =
        ended_events.iter().map(|event| (&event["job"]["job_id"], &event["source"])).collect();
    sources.sort_by_key(|(job, _)| job.to_string());
    assert_eq!(sources, [(&json!("4750"), &json!("reconcile")), (&json!(job_id(4750, JOB, 1)), &json!("reconcile"))]);
    assert!(azure.build_calls(ORG, 4750) >= 2, "asked at the exchange, then by the reconciler");

    // The run still in progress keeps its credentials.
    assert!(stack.bao.accessor_alive(&going_on_accessor).await);
    assert_eq!(read_config(&stack, &going_on).await, 200);
    assert_eq!(listed_job(&stack, "4751")["state"], "active", "{}", listed_job(&stack, "4751"));

    let (status, answer) = exchange(&stack, &azure.token(ORG, 4750, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_job_completed_hook_revokes_that_jobs_credentials_and_the_runs_end_all_of_them() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, &azure.webhook_config("azure")).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    azure.set_job(ORG, RUN, TimelineJob::new(SIBLING, "inProgress", Some("Azure Pipelines 2")));
    // Two jobs of the run, each with its own Vault token; a step bound to the run; another run.
    let (job, job_accessor) = job_credentials(&stack, &azure, RUN, JOB).await;
    let (sibling, sibling_accessor) = job_credentials(&stack, &azure, RUN, SIBLING).await;
    let (_, run_accessor) = credentials(&stack, &azure, RUN).await;
    azure.set_run(ORG, 4760, Run::InProgress);
    azure.set_job(ORG, 4760, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 3")));
    let (_, other_accessor) = job_credentials(&stack, &azure, 4760, JOB).await;
    for token in [&job, &sibling] {
        assert_eq!(read_config(&stack, token).await, 200, "the job's Vault token works");
    }
    let headers = hook_headers(Some(HOOK_CREDENTIALS));

    // The first job completed: its credentials die, its sibling's and the run's live on.
    let delivery = delivery_id();
    let (status, answer) = stack.broker.post(HOOKS, &headers, job_completed(RUN, JOB, 1, &delivery)).await;
    assert_eq!((status, answer), (200, json!({ "job_id": job_id(RUN, JOB, 1), "revoked": 1 })));
    stack.until_revoked(std::slice::from_ref(&job_accessor), Duration::from_secs(5)).await;
    assert_eq!(read_config(&stack, &job).await, 403, "OpenBao refuses the dead token");
    for accessor in [&sibling_accessor, &run_accessor, &other_accessor] {
        assert!(stack.bao.accessor_alive(accessor).await, "the sibling's, the run's and the other run's live on");
    }
    assert_eq!(read_config(&stack, &sibling).await, 200);
    let (status, answer) = stack.broker.post(HOOKS, &headers, job_completed(RUN, JOB, 1, &delivery)).await;
    assert_eq!((status, &answer["status"]), (202, &json!("duplicate_delivery")), "{answer}");
    // The ended job cannot come back, although the timeline still shows it running.
    let token = azure.token(ORG, RUN, |_| {});
    let (status, answer) = exchange_job(&stack, &token, &["azure-read"], JOB, 1).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");

    // The run completed: the run's and the sibling's credentials die; the other run's live on.
    let delivery = delivery_id();
    let (status, answer) = stack.broker.post(HOOKS, &headers, run_state_changed(RUN, "completed", &delivery)).await;
    assert_eq!((status, answer), (200, json!({ "job_id": "4711", "revoked": 2 })));
    stack.until_revoked(&[sibling_accessor, run_accessor], Duration::from_secs(5)).await;
    assert_eq!(read_config(&stack, &sibling).await, 403);
    assert!(stack.bao.accessor_alive(&other_accessor).await, "run 4760 is not run 4711");
    for job in [job_id(RUN, JOB, 1), job_id(RUN, SIBLING, 1), "4711".to_owned()] {
        assert_eq!(listed_job(&stack, &job)["state"], "ended", "{job}");
    }
    assert_eq!(listed_job(&stack, &job_id(4760, JOB, 1))["state"], "active");
    let (status, answer) = stack.broker.post(HOOKS, &headers, run_state_changed(RUN, "completed", &delivery)).await;
    assert_eq!((status, &answer["status"]), (202, &json!("duplicate_delivery")), "{answer}");
    // A job of the ended run the broker had not seen, although the timeline shows it running.
    let late = "0a6cf2b5-8cde-5e7e-8a43-7b5a0b6c1d2e";
    azure.set_job(ORG, RUN, TimelineJob::new(late, "inProgress", Some("Azure Pipelines 4")));
    let (status, answer) = exchange_job(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"], late, 1).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
    assert!(stack.leases("azure", &job_id(RUN, late, 1)).await.iter().all(|lease| lease.state == LeaseState::Failed));
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_job_the_timeline_shows_completed_is_ended_by_reconciliation() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, ROUNDS_EVERY_SECOND).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    azure.set_job(ORG, RUN, TimelineJob::new(SIBLING, "inProgress", Some("Azure Pipelines 2")));
    let (job, job_accessor) = job_credentials(&stack, &azure, RUN, JOB).await;
    let (sibling, sibling_accessor) = job_credentials(&stack, &azure, RUN, SIBLING).await;

    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "completed", Some("Azure Pipelines 1")));
    stack.until_revoked(std::slice::from_ref(&job_accessor), Duration::from_secs(30)).await;
    assert_eq!(read_config(&stack, &job).await, 403, "OpenBao refuses the dead token");
    assert_eq!(listed_job(&stack, &job_id(RUN, JOB, 1))["ended_by"], "ci_api:reconcile");
    assert!(azure.timeline_calls(ORG, RUN) >= 3, "asked at both exchanges, then by the reconciler");

    // The sibling still runs, in the same run: its credentials live on.
    assert!(stack.bao.accessor_alive(&sibling_accessor).await);
    assert_eq!(read_config(&stack, &sibling).await, 200);
    assert_eq!(listed_job(&stack, &job_id(RUN, SIBLING, 1))["state"], "active");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_job_that_revokes_itself_by_name_ends_itself_and_not_its_run() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, "").await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    azure.set_job(ORG, RUN, TimelineJob::new(SIBLING, "inProgress", Some("Azure Pipelines 2")));
    let (_, job_accessor) = job_credentials(&stack, &azure, RUN, JOB).await;
    let (sibling, sibling_accessor) = job_credentials(&stack, &azure, RUN, SIBLING).await;

    // `ci-creds revoke` in the job's last step names the job, as `ci-creds get` did.
    let bearer = vec![
        ("authorization", format!("Bearer {}", azure.token(ORG, RUN, |_| {}))),
        ("content-type", "application/json".to_owned()),
    ];
    let body = serde_json::to_vec(&json!({ "job": { "id": JOB, "attempt": 1 } })).unwrap();
    let (status, answer) = stack.broker.post("/v1/jobs/self/revoke", &bearer, body).await;
    assert_eq!((status, answer), (200, json!({ "job_id": job_id(RUN, JOB, 1), "revoked": 1 })));
    stack.until_revoked(std::slice::from_ref(&job_accessor), Duration::from_secs(5)).await;
    assert!(stack.bao.accessor_alive(&sibling_accessor).await, "the sibling's credentials live on");
    assert_eq!(read_config(&stack, &sibling).await, 200);
    assert_eq!(listed_job(&stack, &job_id(RUN, JOB, 1))["ended_by"], "self");
    // The run goes on: a later job of it still gets credentials.
    let later = "0a6cf2b5-8cde-5e7e-8a43-7b5a0b6c1d2e";
    azure.set_job(ORG, RUN, TimelineJob::new(later, "inProgress", Some("Azure Pipelines 3")));
    job_credentials(&stack, &azure, RUN, later).await;

    for body in [json!({ "job": { "id": "__default", "attempt": 1 } }), json!({ "stage": "Build" })] {
        let bearer = vec![
            ("authorization", format!("Bearer {}", azure.token(ORG, RUN, |_| {}))),
            ("content-type", "application/json".to_owned()),
        ];
        let (status, answer) =
            stack.broker.post("/v1/jobs/self/revoke", &bearer, serde_json::to_vec(&body).unwrap()).await;
        assert_eq!((status, refusal(&answer).0), (400, Some("invalid_request")), "{body}: {answer}");
    }
    assert!(stack.bao.accessor_alive(&sibling_accessor).await, "nothing refused ended anything");
}
