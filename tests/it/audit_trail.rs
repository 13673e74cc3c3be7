//! The running broker's audit trail: every decision and lifecycle step is one chained event,
//! carrying the presented token's SHA-256 and never a token or secret.

use std::process::Command;
use std::time::{Duration, Instant};

use ci_creds::identity::token_sha256;
use serde_json::{Value, json};

use crate::support::broker::GITHUB_WEBHOOK_SECRET;
use crate::support::proxy::Mode;
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{claims_for, fixture, github_token};

const GITHUB_JOB: &str = "289782451";

fn names(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["event"].as_str().unwrap_or("?")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn records_every_decision_and_lifecycle_step_in_one_chain() {
    let stack = Stack::start().await;
    let broker = &stack.broker;
    let token = github_token(&stack.github, |_| {});
    let (status, granted) = broker.exchange(&token, &json!({"roles": ["deploy-prod", "read-config"]})).await;
    assert_eq!(status, 200, "{granted}");
    let (status, _) = broker.exchange(&token, &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 409, "replayed");
    let (status, _) = broker.exchange("not.a.token", &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 401);
    let dependabot = github_token(&stack.github, |c| c["actor"] = json!("dependabot[bot]"));
    let (status, _) = broker.exchange(&dependabot, &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!(status, 403);

    // The job ends while Vault refuses connections: a failed attempt, then the confirmation.
    stack.vault_proxy.set(Mode::Refuse);
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, _) = broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-77"), delivery).await;
    assert_eq!(status, 200);
    let started = Instant::now();
    while !names(&broker.audit_events()).contains(&"revocation.failed") {
        assert!(started.elapsed() < Duration::from_secs(15), "no failed revocation recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stack.vault_proxy.set(Mode::Forward);
    let started = Instant::now();
    while names(&broker.audit_events()).iter().filter(|n| **n == "revocation.confirmed").count() < 2 {
        assert!(started.elapsed() < Duration::from_secs(20), "revocations not confirmed: {:?}", broker.audit_events());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A GitLab job ends itself with its own token.
    let gitlab = stack.gitlab.sign(&claims_for(&stack.gitlab, "gitlab-token-claims.json", |_| {})).unwrap();
    let (status, _) =
        broker.post("/v1/jobs/self/revoke", &[("authorization", format!("Bearer {gitlab}"))], vec![]).await;
    assert_eq!(status, 200);

    let events = broker.audit_events();
    let sha = token_sha256(&token);
    let seen = names(&events);
    assert_eq!(
        &seen[..6],
        [
            "credential.minted",
            "credential.minted",
            "exchange.granted",
            "exchange.refused",
            "exchange.refused",
            "exchange.refused"
        ],
        "{events:#?}"
    );
    let minted: Vec<&Value> = events.iter().filter(|e| e["event"] == "credential.minted").collect();
    for (event, credential) in minted.iter().zip(granted["credentials"].as_array().unwrap()) {
        assert_eq!(event["token_sha256"], sha.as_str());
        assert_eq!(event["lease_id"], credential["lease_id"]);
        assert_eq!(event["handle"], json!({"vault": {"accessor": credential["vault"]["accessor"]}}));
        assert_eq!(event["job"]["job_id"], GITHUB_JOB);
        assert_eq!(event["job"]["repository"], "octo-org/octo-repo");
    }
    assert_eq!(events[2]["roles"], json!(["deploy-prod", "read-config"]));
    assert_eq!(events[2]["job"]["repository_id"], "74");
    let (replay, garbage, denied) = (&events[3], &events[4], &events[5]);
    assert_eq!(replay["token_sha256"], sha.as_str());
    assert!(replay["reason"].as_str().unwrap().contains("already exchanged"), "{replay}");
    assert_eq!(garbage["token_sha256"], token_sha256("not.a.token").as_str());
    assert!(garbage.get("job").is_none(), "an unverified token names no job: {garbage}");
    assert_eq!(denied["token_sha256"], token_sha256(&dependabot).as_str());
    assert_eq!(denied["denied"][0]["role"], "deploy-prod", "{denied}");

    let ended: Vec<&Value> = events.iter().filter(|e| e["event"] == "job.ended").collect();
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert_eq!(ended[0]["job"], json!({"issuer": "github", "job_id": GITHUB_JOB}));
    assert_eq!(
        (&ended[0]["ended_by"], &ended[0]["delivery_id"], &ended[0]["revoking"]),
        (&json!("webhook:github"), &json!("d-77"), &json!(2))
    );
    assert!(ended[0].get("token_sha256").is_none());
    assert_eq!(ended[1]["ended_by"], "self");
    assert_eq!(ended[1]["token_sha256"], token_sha256(&gitlab).as_str());
    let failed = events.iter().find(|e| e["event"] == "revocation.failed").unwrap();
    assert!(failed["error"].as_str().unwrap().contains("vault"), "{failed}");
    assert!(failed["retry_in_ms"].as_i64().unwrap() >= 1000);
    let confirmed = events.iter().find(|e| e["event"] == "revocation.confirmed").unwrap();
    assert!(confirmed["exposure_ms"].as_i64().unwrap() > 0, "{confirmed}");
    assert!(confirmed["attempts"].as_i64().unwrap() >= 2, "{confirmed}");

    let text = std::fs::read_to_string(broker.audit_path()).unwrap();
    let vault_tokens: Vec<&str> =
        granted["credentials"].as_array().unwrap().iter().map(|c| c["vault"]["token"].as_str().unwrap()).collect();
    for secret in
        [token.as_str(), dependabot.as_str(), gitlab.as_str(), GITHUB_WEBHOOK_SECRET, vault_tokens[0], vault_tokens[1]]
    {
        assert!(!text.contains(secret), "the audit trail holds a secret");
    }
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["seq"], i as u64 + 1);
    }

    let output = Command::new(env!("CARGO_BIN_EXE_ci-creds"))
        .args(["audit", "verify"])
        .arg(broker.audit_path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{out}");
    assert!(out.starts_with(&format!("ok: {} events; head ", events.len())), "{out}");
}
