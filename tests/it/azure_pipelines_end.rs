//! How an Azure Pipelines run's end reaches the broker, end to end: service hooks over HTTP
//! Basic (a completed run ends every credential bound to it, a job's event ends nothing), and the
//! build API asked by the reconciler when no hook came.

use std::time::Duration;

use serde_json::{Value, json};

use crate::azure_pipelines::{events, exchange, listed_job, refusal, stack};
use crate::support::azure_devops::{
    AzureDevOps, HOOK_CREDENTIALS, ORG, RUN, Run, hook_headers, job_state_changed, run_state_changed,
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

    // A job of the run completed, the run going on: nothing ends (credentials are the run's).
    let (status, answer) = deliver(Some(HOOK_CREDENTIALS), job_state_changed(RUN, &delivery_id())).await;
    assert_eq!((status, &answer["status"]), (202, &json!("ignored")), "{answer}");
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
    assert!(events(&stack, "job.ended").is_empty());
    let audited = events(&stack, "webhook.refused");
    assert_eq!(audited.len(), 4, "each refused delivery is audited: {audited:?}");
    assert!(audited.iter().all(|event| event["ci"] == "azure_pipelines" && event["reason"] == "invalid_signature"));
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    let refused = r#"ci_creds_webhook_deliveries_total{ci="azure_pipelines",outcome="invalid_signature"} 4"#;
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
    assert_eq!(ended.len(), 1, "ended once: {ended:?}");
    assert_eq!(ended[0]["job"]["job_id"], "4711");
    assert_eq!((&ended[0]["ended_by"], &ended[0]["source"]), (&json!("webhook:azure_pipelines"), &json!("webhook")));

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
    let (going_on, going_on_accessor) = credentials(&stack, &azure, 4751).await;
    assert_eq!(read_config(&stack, &ended).await, 200);

    azure.set_run(ORG, 4750, Run::Completed);
    stack.until_revoked(std::slice::from_ref(&ended_accessor), Duration::from_secs(30)).await;
    assert_eq!(read_config(&stack, &ended).await, 403, "OpenBao refuses the dead token");
    assert_eq!(listed_job(&stack, "4750")["ended_by"], "ci_api:reconcile");
    let ended_events: Vec<Value> = events(&stack, "job.ended");
    let sources: Vec<(&Value, &Value)> =
        ended_events.iter().map(|event| (&event["job"]["job_id"], &event["source"])).collect();
    assert_eq!(sources, [(&json!("4750"), &json!("reconcile"))]);
    assert!(azure.build_calls(ORG, 4750) >= 2, "asked at the exchange, then by the reconciler");

    // The run still in progress keeps its credentials.
    assert!(stack.bao.accessor_alive(&going_on_accessor).await);
    assert_eq!(read_config(&stack, &going_on).await, 200);
    assert_eq!(listed_job(&stack, "4751")["state"], "active", "{}", listed_job(&stack, "4751"));

    let (status, answer) = exchange(&stack, &azure.token(ORG, 4750, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
}
