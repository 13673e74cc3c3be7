//! A broker whose Vault token holds only the shipped policy (`deploy/vault/ci-creds-broker.hcl`,
//! loaded from the repository): it mints a job token that reads its secret and outlives nothing,
//! revokes it at the job's end, and can grant no Vault policy the token role does not allow.

use reqwest::Method;
use serde_json::json;

use crate::support::github_token;
use crate::support::login_stack::{LoginStack, TOKEN_ROLE, bao_for_the_broker, broker_token, reads_its_secret};
use crate::support::wait_until;

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_holding_only_the_shipped_policy_mints_and_revokes_a_job_token() {
    let bao = bao_for_the_broker().await;
    let (token, _) = broker_token(&bao, json!({ "ttl": "1h", "renewable": true })).await;
    let stack =
        LoginStack::start(&bao, &format!("token_role = \"{TOKEN_ROLE}\"\n"), vec![("TEST_VAULT_TOKEN", token.clone())])
            .await;

    let (job_token, accessor) = stack.exchange().await.expect("granted");
    assert!(reads_its_secret(&bao, &job_token).await, "the job token reads its secret");
    let (_, lookup) = bao.lookup_accessor(&accessor).await;
    assert_eq!(lookup["data"]["policies"], json!(["read-config"]), "exactly the role's policy");
    assert_eq!(lookup["data"]["orphan"], true, "an orphan: it does not die with the broker's token");
    assert_eq!(lookup["data"]["role"], TOKEN_ROLE);

    // The job ends itself: its token is revoked with the broker's token, by accessor.
    let bearer = vec![("authorization", format!("Bearer {}", github_token(&stack.github, |_| {})))];
    let (status, answer) = stack.broker.post("/v1/jobs/self/revoke", &bearer, vec![]).await;
    assert_eq!((status, answer["revoked"].as_u64()), (200, Some(1)), "{answer}");
    wait_until("the job token revoked", || async { !bao.accessor_alive(&accessor).await }).await;
    assert!(!reads_its_secret(&bao, &job_token).await);

    // Nothing beyond what the broker calls: no token without the role, no orphan of its own.
    for path in ["auth/token/create", "auth/token/create-orphan"] {
        let (status, _) = bao.request(Method::POST, path, &token, Some(json!({ "policies": ["read-config"] }))).await;
        assert_eq!(status, 403, "{path}");
    }
    let (status, _) = bao.request(Method::GET, "secret/data/config/app", &token, None).await;
    assert_eq!(status, 403, "the broker's token reads no secret");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_asking_for_a_policy_the_token_role_does_not_allow_is_refused_by_vault() {
    let bao = bao_for_the_broker().await;
    let (token, _) = broker_token(&bao, json!({ "ttl": "1h" })).await;
    let stack =
        LoginStack::start(&bao, &format!("token_role = \"{TOKEN_ROLE}\"\n"), vec![("TEST_VAULT_TOKEN", token)]).await;
    let claims = github_token(&stack.github, |_| {});
    let (status, answer) = stack.broker.exchange(&claims, &json!({ "roles": ["admin"] })).await;
    assert_eq!((status, answer["error"].as_str()), (502, Some("backend_refused")), "{answer}");
}
