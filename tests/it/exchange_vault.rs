//! The exchange end to end against a real OpenBao: what the minted token is, and what it can do.

use ci_creds::store::LeaseState;
use reqwest::Method;
use serde_json::json;

use crate::support;
use crate::support::github_token;
use crate::support::stack::Stack;

#[tokio::test(flavor = "multi_thread")]
async fn mints_a_vault_token_bound_to_the_job() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"], "ttl_seconds": 600})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["job"],
        json!({"issuer": "github", "job_id": "289782451", "repository": "octo-org/octo-repo", "ref": "refs/heads/main"})
    );
    let credential = &body["credentials"][0];
    assert_eq!(credential["role"], "deploy-prod");
    assert_eq!(credential["backend"], "vault");
    assert_eq!(credential["vault"]["address"], stack.vault_proxy.address);
    let expires_at = time::OffsetDateTime::parse(
        credential["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("RFC 3339 expiry");
    let in_seconds = (expires_at - time::OffsetDateTime::now_utc()).whole_seconds();
    assert!((590..=600).contains(&in_seconds), "expires in {in_seconds} s");

    let accessor = credential["vault"]["accessor"].as_str().unwrap();
    let (status, lookup) = stack.bao.lookup_accessor(accessor).await;
    assert_eq!(status, 200);
    let data = &lookup["data"];
    assert_eq!(data["policies"], json!(["deploy-prod"]), "exactly the role's policies, no default");
    assert!((590..=600).contains(&data["ttl"].as_i64().unwrap()), "ttl {}", data["ttl"]);
    assert_eq!(
        data["meta"],
        json!({"issuer": "github", "job_id": "289782451", "repository": "octo-org/octo-repo", "ref": "refs/heads/main", "role": "deploy-prod"})
    );

    let vault_token = credential["vault"]["token"].as_str().unwrap();
    let (status, secret) = stack.bao.request(Method::GET, "secret/data/deploy/db", vault_token, None).await;
    assert_eq!(status, 200, "the policy allows this read");
    assert_eq!(secret["data"]["data"]["password"], "deploy-db-password");
    let (status, _) = stack.bao.request(Method::GET, "secret/data/other/thing", vault_token, None).await;
    assert_eq!(status, 403, "and nothing else");
    let (status, _) = stack.bao.request(Method::GET, "auth/token/lookup-self", vault_token, None).await;
    assert_eq!(status, 403, "not even the default policy's self-lookup");

    let leases = stack.leases("github", "289782451").await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].state, LeaseState::Active);
    assert_eq!(leases[0].handle, Some(ci_creds::backends::RevokeHandle::Vault { accessor: accessor.to_owned() }));
    assert_eq!(leases[0].id, credential["lease_id"].as_str().unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn clamps_the_ttl_to_the_roles_max() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"], "ttl_seconds": 86400})).await;
    assert_eq!(status, 200, "{body}");
    let (_, lookup) = stack.bao.lookup_accessor(body["credentials"][0]["vault"]["accessor"].as_str().unwrap()).await;
    let ttl = lookup["data"]["ttl"].as_i64().unwrap();
    assert!((890..=900).contains(&ttl), "15m max_ttl, got {ttl}");
}

#[tokio::test(flavor = "multi_thread")]
async fn takes_a_whole_ttl_written_with_a_decimal_point() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"], "ttl_seconds": 600.0})).await;
    assert_eq!(status, 200, "{body}");
    let (_, lookup) = stack.bao.lookup_accessor(body["credentials"][0]["vault"]["accessor"].as_str().unwrap()).await;
    let ttl = lookup["data"]["ttl"].as_i64().unwrap();
    assert!((590..=600).contains(&ttl), "600 s asked, got {ttl}");
}

#[tokio::test(flavor = "multi_thread")]
async fn grants_several_roles_in_one_exchange() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod", "read-config"]})).await;
    assert_eq!(status, 200, "{body}");
    let roles: Vec<_> = body["credentials"].as_array().unwrap().iter().map(|c| c["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["deploy-prod", "read-config"]);
    let leases = stack.leases("github", "289782451").await;
    assert_eq!(leases.len(), 2);
    assert!(leases.iter().all(|l| l.state == LeaseState::Active));
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_a_replayed_token_also_after_a_restart() {
    let mut stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let body = json!({"roles": ["read-config"]});
    assert_eq!(stack.broker.exchange(&token, &body).await.0, 200);
    let (status, answer) = stack.broker.exchange(&token, &body).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("token_replayed")));

    stack.broker.stop();
    stack.broker.spawn().await;
    let (status, answer) = stack.broker.exchange(&token, &body).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("token_replayed")),
        "the replay record survives a restart"
    );
    let fresh = github_token(&stack.github, |_| {});
    assert_eq!(stack.broker.exchange(&fresh, &body).await.0, 200, "a fresh token of the same job is fine");
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_a_replayed_buildkite_token_identified_by_its_hash() {
    let stack = Stack::start().await;
    let claims = support::claims_for(&stack.buildkite, "buildkite-token-claims.json", |_| {});
    let token = stack.buildkite.sign(&claims).unwrap();
    let body = json!({"roles": ["read-config"]});
    let (status, answer) = stack.broker.exchange(&token, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["job"]["repository"], "acme-inc/super-duper-app");
    assert_eq!(stack.broker.exchange(&token, &body).await.0, 409);
}
