//! How a Jenkins build's end reaches the broker, end to end: the REST API asked at exchange and by
//! the reconciler (a finished build, a deleted one), the Notification plugin's deliveries over
//! HTTP Basic; and single-use agents, named by the computers the API lists.

use std::time::Duration;

use serde_json::{Value, json};

use crate::jenkins::{exchange, refusal, stack};
use crate::support::jenkins::{
    AGENT, BUILD, Build, FULL_NAME, Jenkins, MAIN, NOTIFICATION_CREDENTIALS, notification, notification_headers,
};
use crate::support::stack::Stack;

const ROUNDS_EVERY_SECOND: &str = "\n[lifecycle]\nreconcile_interval = \"1s\"\nreconcile_after = \"1s\"\n";

/// The branch job of branch `feature/x`: Jenkins names the item `feature%2Fx`.
const FEATURE: &str = "job/octo-org/job/octo-repo/job/feature%252Fx/";

const BUILD_TREE: &str = "api/json?tree=number,url,building,result,actions[revision[head[name,id,origin[name]]]]";
const COMPUTERS: &str =
    "/computer/api/json?tree=computer[displayName,assignedLabels[name],executors[currentExecutable[number,url]]]";

/// Another token of the same build: minted a second later, so not the same text.
fn later(claims: &mut Value) {
    claims["iat"] = json!(claims["iat"].as_i64().unwrap() + 1);
}

fn job_id(number: u64) -> String {
    format!("{FULL_NAME}#{number}")
}

/// What OpenBao answers `token` reading the config secret its policy allows.
async fn read_config(stack: &Stack, token: &str) -> u16 {
    stack.bao.request(reqwest::Method::GET, "secret/data/config/app", token, None).await.0
}

fn events(stack: &Stack, name: &str) -> Vec<Value> {
    stack.broker.audit_events().into_iter().filter(|event| event["event"] == name).collect()
}

fn listed_job(stack: &Stack, job_id: &str) -> Value {
    let jobs: Value = serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap();
    jobs.as_array().unwrap().iter().find(|job| job["job_id"] == job_id).cloned().expect("the job is listed")
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_builds_the_api_reports_finished_or_deleted_are_ended_and_their_tokens_die() {
    let jenkins = Jenkins::start().await;
    let config = format!("{}{ROUNDS_EVERY_SECOND}", jenkins.api_config(""));
    let stack = stack(&jenkins, &config, "", "").await;

    // The controller's REST API wants its user's token, as Jenkins does.
    let anonymous = reqwest::get(format!("{}{MAIN}42/api/json", jenkins.root)).await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 403);

    // Finished before the exchange: refused, and ended at once.
    jenkins.set_build(MAIN, 43, Build::Finished("SUCCESS"));
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 43, |_| {}), &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
    assert!(stack.leases("jenkins", &job_id(43)).await.is_empty(), "no lease was written");
    let job = listed_job(&stack, &job_id(43));
    assert_eq!((&job["state"], &job["ended_by"]), (&json!("ended"), &json!("ci_api:exchange")));
    let asked = format!("/{MAIN}43/{BUILD_TREE}");
    let seen: Vec<(String, u16)> = jenkins.requests().into_iter().map(|seen| (seen.target, seen.status)).collect();
    assert!(seen.contains(&(asked, 200)), "asked with the user's token: {seen:?}");
    assert!(!seen.iter().any(|(target, _)| target.starts_with("/computer")), "a finished build runs on nothing");

    // Running at the exchange; then finished, or deleted, with no word from Jenkins itself.
    jenkins.set_build(MAIN, BUILD, Build::Running { agent: Some(AGENT) });
    jenkins.set_build(MAIN, 44, Build::Running { agent: Some(AGENT) });
    let mut vault_tokens = Vec::new();
    let mut accessors = Vec::new();
    for number in [BUILD, 44] {
        let (status, answer) = exchange(&stack, &jenkins.token(MAIN, number, |_| {}), &["jenkins-read"]).await;
        assert_eq!(status, 200, "build {number}: {answer}");
        let vault = &answer["credentials"][0]["vault"];
        vault_tokens.push(vault["token"].as_str().unwrap().to_owned());
        accessors.push(vault["accessor"].as_str().unwrap().to_owned());
    }
    assert_eq!(jenkins.calls(COMPUTERS), 2, "each running build's agent is asked for: {:?}", jenkins.requests());
    let runner = &listed_job(&stack, &job_id(BUILD))["runner"];
    assert_eq!((&runner["name"], &runner["source"]), (&json!(AGENT), &json!("ci_api")), "{runner}");
    for token in &vault_tokens {
        assert_eq!(read_config(&stack, token).await, 200, "the job's Vault token works");
    }

    jenkins.set_build(MAIN, BUILD, Build::Finished("FAILURE"));
    jenkins.delete_build(MAIN, 44);
    stack.until_revoked(&accessors, Duration::from_secs(30)).await;
    for (number, token) in [BUILD, 44].into_iter().zip(&vault_tokens) {
        assert_eq!(read_config(&stack, token).await, 403, "build {number}: OpenBao refuses the dead token");
        assert_eq!(listed_job(&stack, &job_id(number))["ended_by"], "ci_api:reconcile", "build {number}");
        let (status, answer) = exchange(&stack, &jenkins.token(MAIN, number, later), &["jenkins-read"]).await;
        assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "build {number}: {answer}");
    }
    let deleted = jenkins
        .requests()
        .into_iter()
        .any(|seen| seen.target == format!("/{MAIN}44/{BUILD_TREE}") && seen.status == 404);
    assert!(deleted, "the deleted build's 404 was asked for and read as its end");
    let ended = events(&stack, "job.ended");
    let sources: Vec<(&Value, &Value)> =
        ended.iter().map(|event| (&event["job"]["job_id"], &event["source"])).collect();
    assert_eq!(sources.len(), 3, "{sources:?}");
    assert!(sources.contains(&(&json!(job_id(44)), &json!("reconcile"))), "{sources:?}");

    // A branch whose name holds a `/` is asked for under the job's URL as Jenkins writes it.
    jenkins.set_build(FEATURE, 7, Build::Running { agent: Some(AGENT) });
    let token = jenkins.token(FEATURE, 7, |claims| claims["branch"] = json!("feature/x"));
    let (status, answer) = exchange(&stack, &token, &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");
    let asked = jenkins.requests().into_iter().find(|seen| seen.target.starts_with(&format!("/{FEATURE}7/")));
    assert_eq!(asked.map(|seen| (seen.target, seen.status)), Some((format!("/{FEATURE}7/{BUILD_TREE}"), 200)));
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_notification_deliveries_end_a_build_only_with_the_credentials_and_only_when_it_ends() {
    let jenkins = Jenkins::start().await;
    let stack = stack(&jenkins, &jenkins.webhook_config(), "", "").await;
    let live = stack.accessors(&jenkins.token(MAIN, BUILD, |_| {}), &["jenkins-read"]).await;
    let broker = &stack.broker;
    let deliver = |credentials: Option<&str>, phase: &str| {
        let body = notification(&jenkins.root, MAIN, BUILD, phase);
        let headers = notification_headers(credentials);
        async move { broker.post("/v1/webhooks/jenkins", &headers, body).await }
    };

    for phase in ["QUEUED", "STARTED"] {
        let (status, answer) = deliver(Some(NOTIFICATION_CREDENTIALS), phase).await;
        assert_eq!((status, &answer["status"]), (202, &json!("ignored")), "{phase}: {answer}");
    }
    let (user, _) = NOTIFICATION_CREDENTIALS.split_once(':').unwrap();
    for credentials in [Some(format!("{user}:wrong")), Some(format!("{NOTIFICATION_CREDENTIALS}x")), None] {
        let (status, answer) = deliver(credentials.as_deref(), "COMPLETED").await;
        assert_eq!((status, refusal(&answer).0), (401, Some("invalid_signature")), "{credentials:?}: {answer}");
    }
    let bearer = vec![("authorization", format!("Bearer {NOTIFICATION_CREDENTIALS}"))];
    let body = notification(&jenkins.root, MAIN, BUILD, "COMPLETED");
    assert_eq!(stack.broker.post("/v1/webhooks/jenkins", &bearer, body).await.0, 401, "not Basic");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(stack.bao.accessor_alive(&live[0]).await, "nothing above ended the build");
    assert!(events(&stack, "job.ended").is_empty());
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    let refused = r#"ci_creds_webhook_deliveries_total{ci="jenkins",webhook="jenkins",outcome="invalid_signature"} 4"#;
    assert!(metrics.lines().any(|line| line == refused), "{metrics}");
    let audited = events(&stack, "webhook.refused");
    assert_eq!(audited.len(), 4, "each refused delivery is audited");
    assert!(audited.iter().all(|event| event["ci"] == "jenkins" && event["reason"] == "invalid_signature"));

    let (status, answer) = deliver(Some(NOTIFICATION_CREDENTIALS), "COMPLETED").await;
    assert_eq!((status, answer), (200, json!({"job_id": job_id(BUILD), "revoked": 1})));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
    // Redelivered, then FINALIZED: the build had ended, nothing more to revoke.
    for phase in ["COMPLETED", "FINALIZED"] {
        let (status, answer) = deliver(Some(NOTIFICATION_CREDENTIALS), phase).await;
        assert_eq!((status, answer), (200, json!({"job_id": job_id(BUILD), "revoked": 0})), "{phase}");
    }
    let ended = events(&stack, "job.ended");
    assert_eq!(ended.len(), 1, "ended once: {ended:?}");
    assert_eq!(ended[0]["job"]["job_id"], job_id(BUILD));
    assert_eq!((&ended[0]["ended_by"], &ended[0]["source"]), (&json!("webhook:jenkins"), &json!("webhook")));
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, later), &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "a fresh token of the ended build: {answer}");

    // A branch whose name holds a `/`: the delivery names the same build as its token.
    let token = jenkins.token(FEATURE, 7, |claims| claims["branch"] = json!("feature/x"));
    let live = stack.accessors(&token, &["jenkins-read"]).await;
    let body = notification(&jenkins.root, FEATURE, 7, "COMPLETED");
    let headers = notification_headers(Some(NOTIFICATION_CREDENTIALS));
    let (status, answer) = stack.broker.post("/v1/webhooks/jenkins", &headers, body).await;
    assert_eq!((status, answer), (200, json!({"job_id": "octo-org/octo-repo/feature%2Fx#7", "revoked": 1})));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_single_use_agents_serve_one_build() {
    let jenkins = Jenkins::start().await;
    let tiers =
        "  - name: jenkins-agents\n    single_use: true\n    match: { issuer: jenkins, runner_labels: [linux] }\n";
    let stack = stack(&jenkins, &jenkins.api_config(""), "", tiers).await;
    jenkins.set_build(MAIN, BUILD, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, |_| {}), &["jenkins-single-use"]).await;
    assert_eq!(status, 200, "{answer}");

    // The agent's next build: the computers list it on the same agent.
    jenkins.set_build(MAIN, BUILD, Build::Finished("SUCCESS"));
    jenkins.set_build(MAIN, 43, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 43, |_| {}), &["jenkins-single-use"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("runner_reused")), "{answer}");
    assert!(refusal(&answer).1.contains(AGENT), "the message names the agent: {answer}");
    let reused = events(&stack, "runner.reused");
    assert_eq!(reused.len(), 1, "{reused:?}");
    assert_eq!(
        (&reused[0]["runner_key"], &reused[0]["first_job_id"], &reused[0]["tier"]),
        (&json!(AGENT), &json!(job_id(BUILD)), &json!("jenkins-agents"))
    );

    // A fresh agent serves its first build; a build on no agent the API shows is refused.
    jenkins.set_build(MAIN, 44, Build::Running { agent: Some("linux-agent-2") });
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 44, |_| {}), &["jenkins-single-use"]).await;
    assert_eq!(status, 200, "{answer}");
    jenkins.set_build(MAIN, 45, Build::Running { agent: None });
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 45, |_| {}), &["jenkins-single-use"]).await;
    // Its labels unknown, it is in no tier: refused, with why, and nothing minted.
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    let reasons = &answer["denied"][0]["reasons"];
    assert_eq!(
        reasons,
        &json!([
            "runner_tier: the job's runner is in no runner tier, its facts unknown: the CI's API names no runner for a job it reports as `building`"
        ])
    );
    assert!(stack.leases("jenkins", &job_id(45)).await.is_empty());

    // The fleet report counts the agents like any other runners, keyed by name; judged jobs are
    // recorded in the background.
    let mut report = Value::Null;
    for _ in 0..100 {
        report = serde_json::from_str(&stack.broker.cli(&["runners", "report", "--format", "json"])).unwrap();
        if report["summary"]["jobs"] == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let runners = report["runners"].as_array().unwrap();
    let agent = |key: &str| runners.iter().find(|runner| runner["key"] == key).cloned().unwrap_or(Value::Null);
    assert_eq!((&agent(AGENT)["issuer"], &agent(AGENT)["reused"]), (&json!("jenkins"), &json!(true)), "{report}");
    assert_eq!(agent("linux-agent-2")["single_use"], json!(true), "{report}");
}
