//! `max_exchanges_per_job`: what one job can mint of a role is bounded, and a job past its cap is
//! refused, audited and counted against its runner in the fleet report.

use serde_json::{Value, json};

use crate::support::claims_for;
use crate::support::stack::Stack;
use crate::support::{eventually, postgres::Postgres};

/// `capped` may be had twice per job; `read-config` keeps the default cap.
const CAPPED: &str = r#"  - name: capped
    backend: vault
    max_ttl: 5m
    max_exchanges_per_job: 2
    vault:
      policies: [read-config]
    allow:
      - issuer: buildkite
        owner_id: "0184990a-0000-4000-8000-000000000001"
"#;

/// A fresh token of Buildkite job `job_id` on self-hosted agent `agent-cap` (its own `jti`: two
/// tokens signed in one second would otherwise be one token, and a replay).
fn token(stack: &Stack, job_id: &str) -> String {
    let claims = claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| {
        c["jti"] = json!(uuid::Uuid::new_v4().to_string());
        c["job_id"] = json!(job_id);
        c["agent_id"] = json!("agent-cap");
        c["runner_environment"] = json!("self-hosted");
    });
    stack.buildkite.sign(&claims).unwrap()
}

async fn exchange(stack: &Stack, token: &str, role: &str) -> (u16, Value) {
    stack.broker.exchange(token, &json!({ "roles": [role] })).await
}

fn report(stack: &Stack) -> Value {
    serde_json::from_str(&stack.broker.cli(&["runners", "report", "--format", "json"])).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_third_exchange_of_a_capped_role_is_refused_and_reported_against_the_runner() {
    let stack = Stack::start_with("", CAPPED, Vec::new()).await;
    for n in 1..=2 {
        let (status, answer) = exchange(&stack, &token(&stack, "job-a"), "capped").await;
        assert_eq!(status, 200, "exchange {n}: {answer}");
    }
    let third = token(&stack, "job-a");
    let (status, answer) = exchange(&stack, &third, "capped").await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("exchange_cap_reached")), "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("`capped`"), "{answer}");
    let (status, answer) = exchange(&stack, &third, "capped").await;
    assert_eq!(answer["error"], "exchange_cap_reached", "the refused token was not spent: {status} {answer}");
    assert_eq!(stack.leases("buildkite", "job-a").await.len(), 2, "nothing written for a refused exchange");

    let (status, answer) = exchange(&stack, &token(&stack, "job-a"), "read-config").await;
    assert_eq!(status, 200, "another role of the same job: {answer}");
    let (status, answer) = exchange(&stack, &token(&stack, "job-b"), "capped").await;
    assert_eq!(status, 200, "another job: {answer}");

    let refusals = stack.broker.audit_events();
    let refused = refusals
        .iter()
        .filter(|e| e["event"] == "exchange.refused" && e["job"]["job_id"] == "job-a")
        .collect::<Vec<_>>();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0]["reason"].as_str().unwrap_or_default().contains("max_exchanges_per_job"), "{refused:?}");
    assert_eq!(refused[0]["address"], "127.0.0.1", "the refusal says where it came from");

    let found = eventually(|| async {
        let report = report(&stack);
        let runners = report["runners"].as_array().cloned().unwrap_or_default();
        runners.iter().any(|r| r["key"] == "agent-cap" && r["refused"]["exchange_cap"] == 2)
    })
    .await;
    assert!(found, "the runner's refusals: {}", report(&stack));
    let report = report(&stack);
    let figures = report["summary"]["figures"].as_array().unwrap();
    let suspicious = figures.iter().find(|f| f["name"] == "suspicious_attempt_runners").unwrap();
    assert_eq!((&suspicious["value"], &suspicious["met"]), (&json!(1.0), &json!(false)), "{suspicious}");

    let metrics = stack.broker.get_text("/metrics").await.1;
    let series = r#"ci_creds_runner_refusals_total{reason="exchange_cap"} 2"#;
    assert!(metrics.lines().any(|line| line == series), "{series} in\n{metrics}");
}

/// Exchanges of one job at once, many in one group commit: no more than the cap are granted.
async fn concurrent_exchanges_never_pass_the_cap(stack: &Stack) {
    let answers = futures_util::future::join_all((0..8).map(|_| async {
        let token = token(stack, "job-burst");
        exchange(stack, &token, "capped").await
    }))
    .await;
    let granted = answers.iter().filter(|(status, _)| *status == 200).count();
    let capped = answers.iter().filter(|(_, answer)| answer["error"] == "exchange_cap_reached").count();
    assert_eq!((granted, capped), (2, 6), "{answers:?}");
    assert_eq!(stack.leases("buildkite", "job-burst").await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_exchanges_of_a_job_never_pass_its_cap_on_sqlite() {
    let stack = Stack::start_with("", CAPPED, Vec::new()).await;
    concurrent_exchanges_never_pass_the_cap(&stack).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_exchanges_of_a_job_never_pass_its_cap_on_postgres() {
    let postgres = Postgres::start().await;
    let stack = Stack::start_with_policy(Some(&postgres), "", "", CAPPED, Vec::new()).await;
    concurrent_exchanges_never_pass_the_cap(&stack).await;
}
