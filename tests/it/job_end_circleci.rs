//! CircleCI's `job-completed` webhook ends the job its `job.id` names (the token's
//! `oidc.circleci.com/job-id`): signed deliveries only, each applied once. And a job rerun with
//! SSH gets nothing unless a rule names it.

use std::time::Duration;

use serde_json::json;

use crate::support::stack::Stack;
use crate::support::webhooks::{body, hmac_hex};
use crate::support::{claims_for, fixture, start_issuer};

const SECRET: &str = "test-circleci-webhook-secret";
const JOB: &str = "8b91f9a8-7975-4e60-916c-f0152ccbc937";
const ROLE: &str = r#"
  - name: circleci-config
    backend: vault
    max_ttl: 5m
    vault:
      policies: [read-config]
    allow:
      - issuer: circleci
        repository_id: "84996744-a854-4f5e-aea3-04e2851dc1d2"
"#;
const SSH_ROLE: &str = r#"
  - name: circleci-debug
    backend: vault
    max_ttl: 5m
    vault:
      policies: [read-config]
    allow:
      - issuer: circleci
        repository_id: "84996744-a854-4f5e-aea3-04e2851dc1d2"
        event: ssh_rerun
"#;

fn signed(signatures: &str) -> Vec<(&'static str, String)> {
    vec![
        ("circleci-event-type", "job-completed".into()),
        ("circleci-signature", signatures.to_owned()),
        ("content-type", "application/json".into()),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_job_completed_ends_the_job_once_and_bad_signatures_change_nothing() {
    let circleci = start_issuer().await;
    let config = format!(
        "[[issuers]]\nname = \"circleci\"\nkind = \"circleci\"\nissuer = \"{}\"\n\n[webhooks.circleci]\nissuer = \"circleci\"\nsecret_env = \"TEST_CIRCLECI_WEBHOOK_SECRET\"\n",
        circleci.url()
    );
    let stack = Stack::start_with(&config, ROLE, vec![("TEST_CIRCLECI_WEBHOOK_SECRET", SECRET.to_owned())]).await;
    let token = |circleci: &ci_creds::dev::DevIssuer| {
        circleci.sign(&claims_for(circleci, "circleci-token-claims.json", |_| {})).expect("signs")
    };
    let live = stack.accessors(&token(&circleci), &["circleci-config"]).await;
    assert!(stack.bao.accessor_alive(&live[0]).await);

    let delivery = body(&fixture("circleci-job-completed.json"));
    let good = hmac_hex(SECRET, &delivery);
    for (case, signatures) in [
        ("missing", String::new()),
        ("wrong", format!("v1={}", "00".repeat(32))),
        ("another secret", format!("v1={}", hmac_hex("not-the-secret", &delivery))),
        ("unknown version only", format!("v2={good}")),
    ] {
        let mut headers = signed(&signatures);
        if signatures.is_empty() {
            headers.retain(|(name, _)| *name != "circleci-signature");
        }
        let (status, answer) = stack.broker.post("/v1/webhooks/circleci", &headers, delivery.clone()).await;
        assert_eq!((status, answer["error"].as_str()), (401, Some("invalid_signature")), "{case}: {answer}");
    }
    assert!(stack.bao.accessor_alive(&live[0]).await, "nothing changed");

    // A rotated secret: CircleCI sends one v1 value per secret; any match is enough.
    let rotated = format!("v1={},v1={good}", "11".repeat(32));
    let (status, answer) = stack.broker.post("/v1/webhooks/circleci", &signed(&rotated), delivery.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({ "job_id": JOB, "revoked": 1 }));
    stack.until_revoked(&live, Duration::from_secs(5)).await;

    let (status, answer) =
        stack.broker.post("/v1/webhooks/circleci", &signed(&format!("v1={good}")), delivery.clone()).await;
    assert_eq!((status, answer["status"].as_str()), (202, Some("duplicate_delivery")), "a redelivery: {answer}");

    // CircleCI tokens carry no jti: a fresh token is one issued at another moment.
    let fresh = circleci
        .sign(&claims_for(&circleci, "circleci-token-claims.json", |claims| {
            claims["iat"] = (claims["iat"].as_i64().unwrap_or_default() - 5).into();
        }))
        .expect("signs");
    let (status, answer) = stack.broker.exchange(&fresh, &json!({ "roles": ["circleci-config"] })).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_an_ssh_rerun_unless_a_rule_names_it() {
    let circleci = start_issuer().await;
    let config = format!("[[issuers]]\nname = \"circleci\"\nkind = \"circleci\"\nissuer = \"{}\"\n", circleci.url());
    let stack = Stack::start_with(&config, &format!("{ROLE}{SSH_ROLE}"), Vec::new()).await;
    let token = |ssh_rerun: bool| {
        let claims = claims_for(&circleci, "circleci-token-claims.json", |claims| {
            claims["oidc.circleci.com/ssh-rerun"] = json!(ssh_rerun);
            // Each token its own: CircleCI's carry no jti.
            claims["iat"] = (claims["iat"].as_i64().unwrap_or_default() - i64::from(ssh_rerun)).into();
        });
        circleci.sign(&claims).expect("signs")
    };
    let rerun = token(true);
    let (status, answer) = stack.broker.exchange(&rerun, &json!({ "roles": ["circleci-config"] })).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("access_denied")), "{answer}");
    assert_eq!(
        answer["denied"][0]["reasons"],
        json!(["event: ssh_rerun is a dangerous trigger and the rule does not name it explicitly"])
    );
    // A denial spends nothing: the same token again.
    let (status, answer) = stack.broker.exchange(&rerun, &json!({ "roles": ["circleci-debug"] })).await;
    assert_eq!(status, 200, "a rule naming ssh_rerun allows it: {answer}");
    let (status, answer) = stack.broker.exchange(&token(false), &json!({ "roles": ["circleci-config"] })).await;
    assert_eq!(status, 200, "the same job without SSH: {answer}");
}
