//! Runners as identities, against the real broker, OpenBao and the loopback CI APIs: policy on
//! runner facts the token does not carry, asked of the CI once per job; single-use tiers whose
//! runner serves one job, across replicas too.

use serde_json::{Value, json};

use crate::support::ci_api::{CiApi, JobAnswer};
use crate::support::github_api::{APP_ID, GithubApi};
use crate::support::postgres::Postgres;
use crate::support::stack::Stack;
use crate::support::{claims_for, github_token};

const TIERS: &str = r#"  - name: ephemeral
    single_use: true
    match: { runner_environment: self-hosted, runner_group: ephemeral }
  - name: release-runners
    match: { runner_environment: self-hosted, runner_group: release }
  - name: buildkite-ephemeral
    single_use: true
    match: { issuer: buildkite, runner_queue: ephemeral }
  - name: gitlab-shared
    single_use: true
    match: { issuer: gitlab, runner_type: instance_type }
"#;

const ROLES: &str = r#"  - name: release-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: github, repository_id: "74", runner_tier: release-runners }
  - name: group-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: github, repository_id: "74", runner_group: release, runner_labels: [Self-Hosted, linux] }
  - name: linux-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: buildkite, runner_labels: [os=linux] }
  - name: ephemeral-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: [github, buildkite, gitlab], runner_tier: [ephemeral, buildkite-ephemeral, gitlab-shared] }
"#;

async fn github_stack(api: &GithubApi) -> Stack {
    let config = format!(
        "[ci_api.github]\napi_url = \"{}\"\napp_id = \"{APP_ID}\"\nprivate_key_env = \"TEST_CI_API_APP_KEY\"\ntimeout_seconds = 1\n",
        api.url
    );
    let env = vec![("TEST_CI_API_APP_KEY", api.private_key_pem.clone())];
    Stack::start_with_policy(None, &config, TIERS, ROLES, env).await
}

/// A token of GitHub job `job_id` on a self-hosted runner.
fn self_hosted(stack: &Stack, job_id: &str) -> String {
    github_token(&stack.github, |claims| {
        claims["check_run_id"] = json!(job_id);
        claims["runner_environment"] = json!("self-hosted");
    })
}

fn roles(names: &[&str]) -> Value {
    json!({ "roles": names })
}

fn reasons(answer: &Value) -> Vec<String> {
    answer["denied"][0]["reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_github_tier_on_runner_group_is_granted_on_that_group_and_refused_elsewhere() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api).await;
    // github-api-job-in-progress.json: runner group `release`, labels self-hosted, linux, release.
    api.set_job("8101", JobAnswer::RunningOn(json!({})));
    let (status, answer) =
        stack.broker.exchange(&self_hosted(&stack, "8101"), &roles(&["release-read", "group-read"])).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(api.job_calls("8101"), 1, "one call serves the facts and the liveness check");

    api.set_job("8102", JobAnswer::RunningOn(json!({"runner_group_name": "Default", "labels": ["self-hosted"]})));
    let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8102"), &roles(&["group-read"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("access_denied")), "{answer}");
    assert_eq!(
        reasons(&answer),
        [
            "runner_group: Default is not one of the allowed values",
            "runner_labels: [self-hosted] lacks a label the rule requires"
        ]
    );
    let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8102"), &roles(&["release-read"])).await;
    assert_eq!(
        (status, reasons(&answer)),
        (403, vec!["runner_tier: the job's runner is in no runner tier".to_owned()])
    );

    // The job's next exchange reuses the running answer, runner and all.
    let calls = api.job_calls("8102");
    let (status, _) = stack.broker.exchange(&self_hosted(&stack, "8102"), &roles(&["read-config"])).await;
    assert_eq!((status, api.job_calls("8102")), (200, calls), "the running answer is reused");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_fact_the_ci_api_cannot_tell_is_refused_with_the_reason() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api).await;
    api.set_job("8103", JobAnswer::ServerError);
    let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8103"), &roles(&["group-read"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("access_denied")), "{answer}");
    let reasons = reasons(&answer);
    assert!(reasons[0].starts_with("runner_group unknown: the CI's API did not answer"), "{reasons:?}");
    assert!(reasons[1].starts_with("runner_labels unknown: "), "{reasons:?}");
    assert!(stack.leases("github", "8103").await.is_empty(), "nothing granted because a fact is absent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_single_use_runner_serves_one_job_however_many_tokens_it_presents() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api).await;
    let ephemeral = json!({"runner_id": 42, "runner_name": "eph-42", "runner_group_name": "ephemeral"});
    api.set_job("8201", JobAnswer::RunningOn(ephemeral.clone()));
    api.set_job("8202", JobAnswer::RunningOn(ephemeral));
    for _ in 0..2 {
        let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8201"), &roles(&["ephemeral-read"])).await;
        assert_eq!(status, 200, "another token of the runner's first job: {answer}");
    }
    let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8202"), &roles(&["ephemeral-read"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("runner_reused")), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("42/eph-42"), "the message names the runner: {answer}");
    let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8201"), &roles(&["ephemeral-read"])).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("runner_reused")),
        "a reused runner serves no single-use job, its first included: {answer}"
    );
    let (status, answer) = stack.broker.exchange(&self_hosted(&stack, "8202"), &roles(&["read-config"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("runner_reused")), "whatever role it asks: {answer}");

    let reused: Vec<Value> =
        stack.broker.audit_events().into_iter().filter(|event| event["event"] == "runner.reused").collect();
    assert_eq!(reused.len(), 3, "{reused:?}");
    assert_eq!((&reused[0]["runner_key"], &reused[0]["first_job_id"]), (&json!("42/eph-42"), &json!("8201")));
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    assert!(
        metrics.contains(r#"ci_creds_runner_reuse_total{issuer="github",tier="ephemeral"} 3"#),
        "{}",
        metrics.lines().filter(|l| l.contains("runner_reuse")).collect::<Vec<_>>().join("\n")
    );
}

/// A Buildkite token of `job_id` on agent `agent_id`, asking for the `queue_key` claim.
fn buildkite_token(stack: &Stack, job_id: &str, agent_id: &str) -> String {
    stack
        .buildkite
        .sign(&claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| {
            c["job_id"] = json!(job_id);
            c["agent_id"] = json!(agent_id);
            c["queue_key"] = json!("ephemeral");
            c["runner_environment"] = json!("self-hosted");
        }))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn buildkite_single_use_needs_nothing_but_the_token() {
    let stack = Stack::start_with_policy(None, "", TIERS, ROLES, Vec::new()).await;
    let broker = &stack.broker;
    let exchange = |job: &'static str, agent: &'static str| {
        let token = buildkite_token(&stack, job, agent);
        async move { broker.exchange(&token, &roles(&["ephemeral-read"])).await }
    };
    assert_eq!(exchange("bk-job-1", "agent-a").await.0, 200);
    let (status, answer) = exchange("bk-job-2", "agent-a").await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("runner_reused")), "{answer}");
    assert_eq!(exchange("bk-job-3", "agent-b").await.0, 200, "a fresh agent serves its first job");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gitlab_tier_on_runner_type_keys_single_use_by_the_runner_manager() {
    let gitlab = CiApi::gitlab().await;
    let config = format!("[ci_api.gitlab]\napi_url = \"{}\"\ntoken_env = \"TEST_GITLAB_API_TOKEN\"\n", gitlab.url);
    let env = vec![("TEST_GITLAB_API_TOKEN", gitlab.token.clone())];
    let stack = Stack::start_with_policy(None, &config, TIERS, ROLES, env).await;
    let token = |job: &str| {
        stack.gitlab.sign(&claims_for(&stack.gitlab, "gitlab-token-claims.json", |c| c["job_id"] = json!(job))).unwrap()
    };
    let shared_runner = |manager: Value| {
        json!({"runner": {"id": 1, "description": "shared-1", "runner_type": "instance_type", "active": true,
                          "is_shared": true, "name": "gitlab-runner", "online": true, "status": "online"},
               "runner_manager": manager})
    };
    // Both jobs on runner 1, a configuration: on different hosts they are different runners.
    gitlab.set_job("401", JobAnswer::RunningOn(shared_runner(json!({"id": 7, "system_id": "s_host_a"}))));
    gitlab.set_job("402", JobAnswer::RunningOn(shared_runner(json!({"id": 8, "system_id": "s_host_b"}))));
    gitlab.set_job("403", JobAnswer::RunningOn(shared_runner(json!({"id": 7, "system_id": "s_host_a"}))));
    gitlab.set_job("404", JobAnswer::RunningOn(shared_runner(Value::Null)));
    gitlab.set_job("405", JobAnswer::Status("running"));
    assert_eq!(stack.broker.exchange(&token("401"), &roles(&["ephemeral-read"])).await.0, 200);
    assert_eq!(stack.broker.exchange(&token("402"), &roles(&["ephemeral-read"])).await.0, 200);
    let (status, answer) = stack.broker.exchange(&token("403"), &roles(&["ephemeral-read"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("runner_reused")), "{answer}");
    let (status, answer) = stack.broker.exchange(&token("404"), &roles(&["ephemeral-read"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("runner_unknown")), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("runner_manager"), "names the missing fact: {answer}");
    // gitlab-api-job-running.json: a `project_type` runner, in no tier here.
    let (status, answer) = stack.broker.exchange(&token("405"), &roles(&["ephemeral-read"])).await;
    assert_eq!(
        (status, reasons(&answer)),
        (403, vec!["runner_tier: the job's runner is in no runner tier".to_owned()])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_reused_across_two_replicas_is_refused_by_either() {
    let postgres = Postgres::start().await;
    let stack = Stack::start_with_policy(Some(&postgres), "", TIERS, ROLES, Vec::new()).await;
    let replica = stack.replica().await;
    let first = buildkite_token(&stack, "bk-job-11", "agent-shared");
    assert_eq!(stack.broker.exchange(&first, &roles(&["ephemeral-read"])).await.0, 200);
    let second = buildkite_token(&stack, "bk-job-12", "agent-shared");
    let (status, answer) = replica.exchange(&second, &roles(&["ephemeral-read"])).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("runner_reused")), "{answer}");
    let again = buildkite_token(&stack, "bk-job-11", "agent-shared");
    let (status, answer) = stack.broker.exchange(&again, &roles(&["ephemeral-read"])).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (403, Some("runner_reused")),
        "the first replica sees the reuse: {answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn buildkite_agent_tags_come_from_the_agent_asked_once() {
    let buildkite = CiApi::buildkite().await;
    let config =
        format!("[ci_api.buildkite]\napi_url = \"{}\"\ntoken_env = \"TEST_BUILDKITE_API_TOKEN\"\n", buildkite.url);
    let env = vec![("TEST_BUILDKITE_API_TOKEN", buildkite.token.clone())];
    let stack = Stack::start_with_policy(None, &config, TIERS, ROLES, env).await;
    // buildkite-api-job.json: agent 0184990a-4782-….
    let agent = "0184990a-4782-42b5-afc1-16715b10b8ff";
    buildkite.set_agent(agent, &["queue=default", "os=linux"]);
    let token = |job: &str| {
        let claims = claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| c["job_id"] = json!(job));
        stack.buildkite.sign(&claims).unwrap()
    };
    for job in ["bk-tags-1", "bk-tags-2"] {
        buildkite.set_job(job, JobAnswer::Status("running"));
        let (status, answer) = stack.broker.exchange(&token(job), &roles(&["linux-read"])).await;
        assert_eq!(status, 200, "{answer}");
    }
    assert_eq!(buildkite.agent_calls(agent), 1, "one call per agent, cached");

    buildkite.set_job("bk-tags-3", JobAnswer::RunningOn(json!({"agent": {"id": "agent-untagged", "name": "x"}})));
    let (status, answer) = stack.broker.exchange(&token("bk-tags-3"), &roles(&["linux-read"])).await;
    assert_eq!(status, 403, "an agent the API does not describe has no known labels: {answer}");
    assert!(reasons(&answer)[0].starts_with("runner_labels unknown"), "{answer}");
}
