//! The runner each job ran on, as the start and completion webhooks tell it: recorded with its
//! source, shown by `jobs list`, and a start is never an end.

use serde_json::{Value, json};

use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers, gitlab_headers};
use crate::support::{claims_for, fixture, github_token};

fn listed(stack: &Stack) -> Value {
    serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap()
}

fn runner_of(jobs: &Value, job_id: &str) -> Value {
    jobs.as_array().unwrap().iter().find(|job| job["job_id"] == job_id).expect("listed")["runner"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_start_webhook_records_the_runner_before_the_job_s_first_exchange_and_ends_nothing() {
    let stack = Stack::start().await;
    let started = fixture("github-workflow-job-in-progress.json");
    let job_id = started["workflow_job"]["id"].to_string();
    let delivery = body(&started);
    let (status, answer) =
        stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-start"), delivery).await;
    assert_eq!((status, &answer["status"]), (202, &json!("runner_recorded")), "{answer}");

    let token = github_token(&stack.github, |claims| claims["check_run_id"] = json!(job_id));
    let (status, answer) = stack.broker.exchange(&token, &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 200, "a start is not an end: {answer}");
    assert_eq!(
        runner_of(&listed(&stack), &job_id),
        json!({"id": "5", "name": "release-runner-5", "group": "release",
               "labels": ["self-hosted", "linux", "release"], "source": "webhook:github"})
    );
    assert!(stack.broker.cli(&["jobs", "list"]).contains("release-runner-5 (5) via webhook:github"));
}

#[tokio::test(flavor = "multi_thread")]
async fn gitlab_s_running_and_finished_job_hooks_name_the_runner() {
    let stack = Stack::start().await;
    let token = stack.gitlab.sign(&claims_for(&stack.gitlab, "gitlab-token-claims.json", |_| {})).unwrap();
    assert_eq!(stack.broker.exchange(&token, &json!({"roles": ["read-config"]})).await.0, 200);
    let running = body(&fixture("gitlab-job-hook-running.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/gitlab", &gitlab_headers(), running).await;
    assert_eq!((status, &answer["status"]), (202, &json!("runner_recorded")));
    let runner = runner_of(&listed(&stack), "302");
    assert_eq!((&runner["name"], &runner["source"]), (&json!("release-runner-1"), &json!("webhook:gitlab")));

    let finished = body(&fixture("gitlab-job-hook.json"));
    assert_eq!(stack.broker.post("/v1/webhooks/gitlab", &gitlab_headers(), finished).await.0, 200);
    let jobs = listed(&stack);
    let job = jobs.as_array().unwrap().iter().find(|job| job["job_id"] == "302").unwrap();
    assert_eq!((&job["state"], &job["runner"]["id"]), (&json!("ended"), &json!("1")));
}
