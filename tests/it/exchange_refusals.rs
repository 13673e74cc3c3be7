//! What the broker refuses, and that a refusal explains itself and leaves nothing behind.

use ci_creds::store::LeaseState;
use serde_json::json;

use crate::support;
use crate::support::github_token;
use crate::support::stack::Stack;

#[tokio::test(flavor = "multi_thread")]
async fn explains_a_denial_with_the_callers_own_claims_only() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |c| c["ref"] = json!("refs/heads/dev"));
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!(status, 403);
    assert_eq!(body["error"], "access_denied");
    assert_eq!(body["denied"][0]["role"], "deploy-prod");
    let reasons: Vec<&str> =
        body["denied"][0]["reasons"].as_array().unwrap().iter().filter_map(|r| r.as_str()).collect();
    assert!(reasons.contains(&"ref: refs/heads/dev is not one of the allowed values"), "{reasons:?}");
    let text = body.to_string();
    assert!(!text.contains("refs/heads/main"), "the policy's own values are not disclosed: {text}");
    assert!(body["request_id"].as_str().is_some_and(|id| !id.is_empty()));
    assert!(stack.leases("github", "289782451").await.is_empty(), "a denial mints nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn grants_all_requested_roles_or_none() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |c| c["environment"] = json!("staging"));
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["read-config", "deploy-prod"]})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["denied"].as_array().unwrap().len(), 1, "only the refused role is listed");
    assert!(stack.leases("github", "289782451").await.is_empty(), "read-config was not minted either");
    let (status, body) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["no-such-role"]})).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("access_denied")));
}

#[tokio::test(flavor = "multi_thread")]
async fn applies_deny_rules_over_allow() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |c| c["actor"] = json!("dependabot[bot]"));
    let (status, _) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!(status, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_dangerous_triggers_unless_a_rule_names_them() {
    let stack = Stack::start().await;
    for event in ["pull_request_target", "workflow_run", "issue_comment"] {
        let token = github_token(&stack.github, |c| c["event_name"] = json!(event));
        let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["read-config"]})).await;
        assert_eq!(status, 403, "{event} refused by a rule that does not name it: {body}");
    }
    let token = github_token(&stack.github, |c| c["event_name"] = json!("pull_request_target"));
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["pr-preview"]})).await;
    assert_eq!(status, 200, "a rule naming pull_request_target allows it: {body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_503_and_leaves_no_active_lease_when_vault_is_down() {
    let mut stack = Stack::start().await;
    stack.bao.stop();
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!((status, body["error"].as_str()), (503, Some("backend_unavailable")), "{body}");
    let leases = stack.leases("github", "289782451").await;
    assert!(leases.iter().all(|l| l.state != LeaseState::Active), "{leases:?}");
    assert!(leases.iter().all(|l| l.state == LeaseState::Failed), "the intent is recorded as failed: {leases:?}");
    let ready = stack.broker.http().get(format!("{}/readyz", stack.broker.url)).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 503, "not ready without Vault");
}

/// Vault refusing the token create (here: the broker's own token revoked) is Vault's answer,
/// not an outage: 502 with Vault's status, and nothing left active.
#[tokio::test(flavor = "multi_thread")]
async fn answers_502_with_vaults_status_when_vault_refuses_the_token() {
    let stack = Stack::start().await;
    let (status, _) = stack.bao.root(reqwest::Method::POST, "auth/token/revoke-self", None).await;
    assert_eq!(status, 204);
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!((status, body["error"].as_str()), (502, Some("backend_refused")), "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.ends_with("HTTP 403"), "{body}");
    let leases = stack.leases("github", "289782451").await;
    assert!(!leases.is_empty() && leases.iter().all(|l| l.state == LeaseState::Failed), "{leases:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn never_logs_a_secret() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod", "read-config"]})).await;
    assert_eq!(status, 200, "{body}");
    let _ = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"]})).await;
    let denied = github_token(&stack.github, |c| c["ref"] = json!("refs/heads/dev"));
    let _ = stack.broker.exchange(&denied, &json!({"roles": ["deploy-prod"]})).await;
    let logs = stack.broker.logs();
    assert!(logs.contains("credentials issued"), "the logs were captured at trace level");
    let signature = token.rsplit('.').next().unwrap();
    let mut secrets = vec![token.as_str(), signature, denied.as_str(), support::bao::ROOT_TOKEN];
    for credential in body["credentials"].as_array().unwrap() {
        secrets.push(credential["vault"]["token"].as_str().unwrap());
    }
    for secret in secrets {
        assert!(!logs.contains(secret), "a secret appears in the broker's logs");
    }
}
