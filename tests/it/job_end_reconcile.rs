//! Reconciliation: no webhook arrives, yet the job's end is found by asking the CI, and its
//! credentials die. Jobs whose end did arrive are never asked about; replicas never ask twice
//! about one job in a round; a broker killed mid-round leaves its jobs to be asked again.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::ci_api::JobAnswer;
use crate::support::github_api::{APP_ID, GithubApi};
use crate::support::postgres::Postgres;
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{eventually, fixture, github_token};

const ROUNDS_EVERY_SECOND: &str = "[lifecycle]\nreconcile_interval = \"1s\"\nreconcile_after = \"1s\"\n";

fn ci_api_table(api: &GithubApi, extra: &str) -> String {
    format!(
        "[ci_api.github]\napi_url = \"{}\"\napp_id = \"{APP_ID}\"\nprivate_key_env = \"TEST_CI_API_APP_KEY\"\ntimeout_seconds = 30\n{extra}",
        api.url
    )
}

fn env(api: &GithubApi) -> Vec<(&'static str, String)> {
    vec![("TEST_CI_API_APP_KEY", api.private_key_pem.clone())]
}

async fn stack(api: &GithubApi, table_extra: &str, lifecycle: &str) -> Stack {
    Stack::start_with(&format!("{}\n{lifecycle}", ci_api_table(api, table_extra)), "", env(api)).await
}

fn job_token(stack: &Stack, job_id: &str) -> String {
    github_token(&stack.github, |claims| claims["check_run_id"] = json!(job_id))
}

fn job<'a>(jobs: &'a Value, job_id: &str) -> &'a Value {
    jobs.as_array().unwrap().iter().find(|job| job["job_id"] == job_id).expect("the job is listed")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_whose_end_no_webhook_brought_is_found_by_asking_the_ci_and_its_token_dies() {
    let api = GithubApi::start().await;
    let stack = stack(&api, "", ROUNDS_EVERY_SECOND).await;
    api.set_job("8001", JobAnswer::Status("in_progress"));
    let live = stack.accessors(&job_token(&stack, "8001"), &["deploy-prod", "read-config"]).await;
    api.set_job("8001", JobAnswer::Status("completed"));
    stack.until_revoked(&live, Duration::from_secs(60)).await;

    let jobs: Value = serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap();
    assert_eq!(job(&jobs, "8001")["ended_by"], "ci_api:reconcile");
    assert!(stack.broker.logs().contains("its completion webhook is missing or failing"));
    let ended: Vec<Value> =
        stack.broker.audit_events().into_iter().filter(|event| event["event"] == "job.ended").collect();
    assert_eq!((ended.len(), &ended[0]["source"]), (1, &json!("reconcile")));
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    assert!(metrics.contains("ci_creds_jobs_ended_total{source=\"reconcile\"} 1"), "{metrics}");
    let (status, answer) = stack.broker.exchange(&job_token(&stack, "8001"), &json!({"roles": ["read-config"]})).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_answer_is_asked_again_next_round() {
    let api = GithubApi::start().await;
    let stack = stack(&api, "check_running = false\n", ROUNDS_EVERY_SECOND).await;
    api.set_job("8101", JobAnswer::ServerError);
    let live = stack.accessors(&job_token(&stack, "8101"), &["read-config"]).await;
    assert!(eventually(|| std::future::ready(api.job_calls("8101") >= 2)).await, "asked again after a 500");
    assert!(stack.bao.accessor_alive(&live[0]).await, "a 500 is not an end");
    api.set_job("8101", JobAnswer::Status("completed"));
    stack.until_revoked(&live, Duration::from_secs(60)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_ended_by_a_webhook_or_by_themselves_are_never_asked_about() {
    let api = GithubApi::start().await;
    let stack = stack(&api, "check_running = false\n", ROUNDS_EVERY_SECOND).await;
    // Each ended job ends right after its exchange, well before a round (1 s on) may ask about it.
    api.set_job("8201", JobAnswer::Status("in_progress"));
    stack.accessors(&job_token(&stack, "8201"), &["read-config"]).await;
    let mut completed = fixture("github-workflow-job-completed.json");
    completed["workflow_job"]["id"] = json!(8201);
    let delivery = body(&completed);
    assert_eq!(stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-8201"), delivery).await.0, 200);
    api.set_job("8202", JobAnswer::Status("in_progress"));
    stack.accessors(&job_token(&stack, "8202"), &["read-config"]).await;
    let bearer = [("authorization", format!("Bearer {}", job_token(&stack, "8202")))];
    assert_eq!(stack.broker.post("/v1/jobs/self/revoke", &bearer, vec![]).await.0, 200);
    api.set_job("8203", JobAnswer::Status("in_progress"));
    stack.accessors(&job_token(&stack, "8203"), &["read-config"]).await;

    // The job still running is asked round after round; the ended ones never.
    assert!(eventually(|| std::future::ready(api.job_calls("8203") >= 3)).await, "rounds run");
    assert_eq!((api.job_calls("8201"), api.job_calls("8202")), (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_never_ask_about_one_job_twice_in_a_round() {
    const JOBS: usize = 30;
    let api = GithubApi::start().await;
    let postgres = Postgres::start().await;
    // Every job is due once (never asked at exchange), and not again for an hour: each must be
    // asked exactly once, by one replica or the other, however their rounds interleave.
    let lifecycle = "[lifecycle]\nreconcile_interval = \"200ms\"\nreconcile_after = \"1h\"\n";
    let config = format!("{}\n{lifecycle}", ci_api_table(&api, "check_running = false\n"));
    let stack = Stack::start_on_with(&postgres, &config, env(&api)).await;
    let b = stack.replica().await;
    let jobs: Vec<String> = (0..JOBS).map(|n| format!("83{n:02}")).collect();
    for (n, job) in jobs.iter().enumerate() {
        api.set_job(job, JobAnswer::Status("in_progress"));
        let replica = if n % 2 == 0 { &stack.broker } else { &b };
        let (status, answer) = replica.exchange(&job_token(&stack, job), &json!({"roles": ["read-config"]})).await;
        assert_eq!(status, 200, "{answer}");
    }
    assert!(eventually(|| std::future::ready(jobs.iter().all(|job| api.job_calls(job) >= 1))).await);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls: Vec<usize> = jobs.iter().map(|job| api.job_calls(job)).collect();
    assert_eq!(calls, vec![1; JOBS], "each job asked once across both replicas");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_killed_mid_round_leaves_its_jobs_to_be_asked_again() {
    let api = GithubApi::start().await;
    let postgres = Postgres::start().await;
    let config = format!("{}\n{ROUNDS_EVERY_SECOND}", ci_api_table(&api, "check_running = false\n"));
    let mut stack = Stack::start_on_with(&postgres, &config, env(&api)).await;
    let mut live = Vec::new();
    for job in ["8401", "8402", "8403"] {
        // The first round's calls hang: the broker is killed while it holds their claims.
        api.set_job(job, JobAnswer::Slow(Duration::from_secs(25)));
        live.extend(stack.accessors(&job_token(&stack, job), &["read-config"]).await);
    }
    let asking = || std::future::ready(["8401", "8402", "8403"].iter().any(|job| api.job_calls(job) == 1));
    assert!(eventually(asking).await, "a round asks");
    tokio::time::sleep(Duration::from_millis(300)).await;
    stack.broker.stop();
    for job in ["8401", "8402", "8403"] {
        api.set_job(job, JobAnswer::Status("completed"));
    }
    let _resumed = stack.replica().await;
    stack.until_revoked(&live, Duration::from_secs(60)).await;
}
