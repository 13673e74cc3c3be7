//! Job end survives what production does to it: the job ending itself, a broker crash between
//! acknowledging and revoking, a backend outage, and credentials that expire by themselves.

use std::time::{Duration, Instant};

use ci_creds::store::LeaseState;
use serde_json::{Value, json};

use crate::support::proxy::Mode;
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{fixture, github_token};

const GITHUB_JOB: &str = "289782451";

async fn end_by_webhook(stack: &Stack) {
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!(status, 200, "the end is acknowledged whatever the backend's state: {answer}");
}

fn leases_json(stack: &Stack) -> Vec<Value> {
    let out = stack.broker.cli(&["leases", "list", "--format", "json"]);
    serde_json::from_str(&out).expect("JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_job_ends_itself_with_its_already_exchanged_token() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let live = stack.accessors(&token, &["deploy-prod"]).await;
    let bearer = vec![("authorization", format!("Bearer {token}"))];
    let (status, answer) = stack.broker.post("/v1/jobs/self/revoke", &bearer, vec![]).await;
    assert_eq!((status, answer), (200, json!({"job_id": GITHUB_JOB, "revoked": 1})));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
    let (status, answer) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")));
    let (status, answer) = stack.broker.post("/v1/jobs/self/revoke", &bearer, vec![]).await;
    assert_eq!((status, answer["revoked"].as_u64()), (200, Some(0)), "ending twice is harmless");

    let (status, answer) =
        stack.broker.post("/v1/jobs/self/revoke", &[("authorization", "Bearer a.b.c".into())], vec![]).await;
    assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_token")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_crash_after_the_acknowledgement_delays_revocation_but_never_loses_it() {
    let mut stack = Stack::start().await;
    let live = stack.accessors(&github_token(&stack.github, |_| {}), &["deploy-prod", "read-config"]).await;
    stack.vault_proxy.set(Mode::BlackHole);
    end_by_webhook(&stack).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stack.broker.stop();
    stack.vault_proxy.set(Mode::Forward);
    assert!(stack.bao.accessor_alive(&live[0]).await, "the crash came before revocation");
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert!(leases.iter().all(|l| l.state == LeaseState::Revoking), "the intent is on disk: {leases:?}");

    stack.broker.spawn().await;
    stack.until_revoked(&live, Duration::from_secs(10)).await;
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert!(leases.iter().all(|l| l.state == LeaseState::Revoked), "{leases:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn retries_through_a_backend_outage_and_shows_it() {
    let stack = Stack::start().await;
    let live = stack.accessors(&github_token(&stack.github, |_| {}), &["deploy-prod"]).await;
    stack.vault_proxy.set(Mode::Refuse);
    end_by_webhook(&stack).await;

    let started = Instant::now();
    let lease = loop {
        let leases = leases_json(&stack);
        if leases[0]["attempts"].as_i64().unwrap_or(0) >= 2 {
            break leases[0].clone();
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no retries seen: {leases:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(lease["state"], "revoking", "a failing revocation stays visible: {lease}");
    assert!(lease["last_error"].as_str().is_some_and(|e| e.contains("vault")), "{lease}");
    let table = stack.broker.cli(&["jobs", "list"]);
    assert!(
        table.lines().any(|l| l.contains(GITHUB_JOB) && l.contains("ended") && l.contains("webhook:github")),
        "{table}"
    );

    stack.vault_proxy.set(Mode::Forward);
    stack.until_revoked(&live, Duration::from_secs(15)).await;
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert_eq!(leases[0].state, LeaseState::Revoked);
    assert!(leases[0].attempts >= 3, "confirmed after the failed attempts: {}", leases[0].attempts);
    assert!(stack.broker.logs().contains("revocation failed; will retry"));
}

#[tokio::test(flavor = "multi_thread")]
async fn expires_leases_that_ran_out_without_a_backend_call() {
    let stack = Stack::start().await;
    stack.accessors(&github_token(&stack.github, |_| {}), &["short-lived"]).await;
    let started = Instant::now();
    loop {
        let leases = stack.leases("github", GITHUB_JOB).await;
        if leases[0].state == LeaseState::Expired {
            assert_eq!(leases[0].attempts, 0, "no revocation was attempted");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{leases:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let leases = leases_json(&stack);
    assert_eq!(leases[0]["state"], "expired");
}
