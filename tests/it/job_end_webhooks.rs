//! CI completion webhooks end jobs: every credential of the job is revoked in OpenBao, and the
//! job can never obtain credentials again. Bad deliveries change nothing.

use std::time::Duration;

use ci_creds::store::LeaseState;
use serde_json::{Value, json};

use crate::support;
use crate::support::stack::Stack;
use crate::support::webhooks::{body, buildkite_signed_headers, github_headers, gitlab_headers};
use crate::support::{claims_for, fixture, github_token};

const GITHUB_JOB: &str = "289782451";

#[tokio::test(flavor = "multi_thread")]
async fn github_completion_revokes_every_credential_and_ends_the_job() {
    let stack = Stack::start().await;
    let live = stack.accessors(&github_token(&stack.github, |_| {}), &["deploy-prod", "read-config"]).await;
    assert!(stack.bao.accessor_alive(&live[0]).await && stack.bao.accessor_alive(&live[1]).await);

    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"job_id": GITHUB_JOB, "revoked": 2}));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert!(leases.iter().all(|l| l.state == LeaseState::Revoked), "{leases:?}");

    let (status, answer) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["read-config"]})).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")), "a fresh valid token is refused");
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_a_bad_signature_and_changes_nothing() {
    let stack = Stack::start().await;
    let live = stack.accessors(&github_token(&stack.github, |_| {}), &["read-config"]).await;
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let mut forged = github_headers(b"another body", "d-1");
    let missing: Vec<_> =
        github_headers(&delivery, "d-2").into_iter().filter(|(name, _)| *name != "x-hub-signature-256").collect();
    for headers in [&mut forged, &mut missing.clone()] {
        let (status, answer) = stack.broker.post("/v1/webhooks/github", headers, delivery.clone()).await;
        assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_signature")));
    }
    let refused: Vec<Value> =
        stack.broker.audit_events().into_iter().filter(|event| event["event"] == "webhook.refused").collect();
    assert_eq!(refused.len(), 2, "each refused delivery is audited");
    for event in &refused {
        assert_eq!((&event["ci"], &event["reason"]), (&json!("github"), &json!("invalid_signature")));
        let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
        // `webhook`: the endpoint's configured name, not the caller's word.
        assert_eq!(
            keys,
            ["ci", "event", "prev", "reason", "seq", "time", "webhook"],
            "nothing of the delivery: {event}"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(stack.bao.accessor_alive(&live[0]).await, "the credential still works");
    assert_eq!(stack.leases("github", GITHUB_JOB).await[0].state, LeaseState::Active);
    let (status, _) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 200, "the job was not ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn acknowledges_other_events_and_redeliveries_without_applying_them() {
    let stack = Stack::start().await;
    let mut in_progress = fixture("github-workflow-job-completed.json");
    in_progress["action"] = json!("in_progress");
    let in_progress = body(&in_progress);
    let (status, _) = stack.broker.post("/v1/webhooks/github", &github_headers(&in_progress, "d-1"), in_progress).await;
    assert_eq!(status, 202);
    let ping = body(&json!({"zen": "Design for failure."}));
    let mut headers = github_headers(&ping, "d-2");
    headers[0].1 = "ping".into();
    assert_eq!(stack.broker.post("/v1/webhooks/github", &headers, ping).await.0, 202);
    let (status, _) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 200, "neither ended the job");

    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (first, answer) =
        stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-3"), delivery.clone()).await;
    assert_eq!((first, answer["revoked"].as_u64()), (200, Some(1)));
    let (again, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-3"), delivery).await;
    assert_eq!((again, answer["status"].as_str()), (202, Some("duplicate_delivery")));
}

#[tokio::test(flavor = "multi_thread")]
async fn remembers_the_end_of_a_job_it_has_not_seen() {
    let stack = Stack::start().await;
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!((status, answer["revoked"].as_u64()), (200, Some(0)));
    let (status, answer) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["read-config"]})).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")));
}

#[tokio::test(flavor = "multi_thread")]
async fn gitlab_job_hook_ends_the_job_on_a_final_status() {
    let stack = Stack::start().await;
    let token = stack.gitlab.sign(&claims_for(&stack.gitlab, "gitlab-token-claims.json", |_| {})).unwrap();
    let live = stack.accessors(&token, &["read-config"]).await;

    let mut running = fixture("gitlab-job-hook.json");
    running["build_status"] = json!("running");
    assert_eq!(stack.broker.post("/v1/webhooks/gitlab", &gitlab_headers(), body(&running)).await.0, 202);
    let mut wrong = gitlab_headers();
    wrong[1].1 = "not-the-token".into();
    let hook = body(&fixture("gitlab-job-hook.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/gitlab", &wrong, hook.clone()).await;
    assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_signature")));
    assert!(stack.bao.accessor_alive(&live[0]).await);

    let (status, answer) = stack.broker.post("/v1/webhooks/gitlab", &gitlab_headers(), hook).await;
    assert_eq!((status, answer), (200, json!({"job_id": "302", "revoked": 1})));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn buildkite_job_finished_is_accepted_signed_or_with_the_token() {
    let stack = Stack::start().await;
    let token = stack.buildkite.sign(&claims_for(&stack.buildkite, "buildkite-token-claims.json", |_| {})).unwrap();
    let live = stack.accessors(&token, &["read-config"]).await;
    let finished = body(&fixture("buildkite-job-finished.json"));
    let now = ci_creds::clock::now();

    let stale = buildkite_signed_headers(&finished, now - 600);
    let (status, _) = stack.broker.post("/v1/webhooks/buildkite", &stale, finished.clone()).await;
    assert_eq!(status, 401, "a signature older than 5 minutes is refused");
    let (status, answer) =
        stack.broker.post("/v1/webhooks/buildkite", &buildkite_signed_headers(&finished, now), finished.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["job_id"], "0184990a-477b-4fa8-9968-496074483cee");
    stack.until_revoked(&live, Duration::from_secs(5)).await;

    let plain = vec![
        ("x-buildkite-event", "job.finished".to_owned()),
        ("x-buildkite-token", support::broker::BUILDKITE_WEBHOOK_TOKEN.to_owned()),
    ];
    let (status, answer) = stack.broker.post("/v1/webhooks/buildkite", &plain, finished).await;
    assert_eq!((status, answer["revoked"].as_u64()), (200, Some(0)), "already ended: nothing left to revoke");
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_oversized_and_unparsable_deliveries() {
    let stack = Stack::start().await;
    let huge = vec![b' '; 2 * 1024 * 1024];
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&huge, "d-1"), huge).await;
    assert_eq!((status, answer["error"].as_str()), (413, Some("payload_too_large")));
    let garbage = b"{not json".to_vec();
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&garbage, "d-2"), garbage).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_request")));
    let (status, _): (u16, Value) = stack.broker.post("/v1/webhooks/jenkins", &[], b"{}".to_vec()).await;
    assert_eq!(status, 404);
}
