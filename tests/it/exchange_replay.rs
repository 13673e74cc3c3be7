//! A token without `jti` is spent once, under what its signature covers: neither a re-encoded
//! ECDSA signature nor an upgrade from a release that spent it under its whole text's hash makes
//! it new.

use ci_creds::dev::{DevIssuer, SigningKey};
use ci_creds::identity::token_sha256;
use serde_json::json;

use crate::support::claims_for;
use crate::support::ecdsa::with_s_negated;
use crate::support::stack::Stack;

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

#[tokio::test(flavor = "multi_thread")]
async fn refuses_an_es256_token_without_jti_replayed_with_s_replaced_by_n_minus_s() {
    let circleci = DevIssuer::start("127.0.0.1:0".parse().unwrap(), SigningKey::generate_es256().unwrap())
        .await
        .expect("issuer starts");
    let config = format!(
        "[[issuers]]\nname = \"circleci\"\nkind = \"circleci\"\nissuer = \"{}\"\nalgorithms = [\"ES256\"]\n",
        circleci.url()
    );
    let stack = Stack::start_with(&config, ROLE, Vec::new()).await;
    // CircleCI's tokens carry no `jti`.
    let token = circleci.sign(&claims_for(&circleci, "circleci-token-claims.json", |_| {})).expect("signs");
    let body = json!({ "roles": ["circleci-config"] });
    let (status, answer) = stack.broker.exchange(&token, &body).await;
    assert_eq!(status, 200, "{answer}");

    let malleated = with_s_negated(&token);
    assert_ne!(malleated, token, "another text");
    let (status, answer) = stack.broker.exchange(&malleated, &body).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("token_replayed")), "verified, then refused: {answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_jti_spent_under_its_legacy_id_stays_spent() {
    let stack = Stack::start().await;
    let claims = claims_for(&stack.buildkite, "buildkite-token-claims.json", |_| {});
    let token = stack.buildkite.sign(&claims).unwrap();
    // What a release before this one recorded on exchanging it.
    let legacy = format!("sha256:{}", token_sha256(&token));
    let exp = claims["exp"].as_i64().unwrap();
    assert!(stack.store().await.record_exchange("buildkite", &legacy, exp).await.unwrap());

    let (status, answer) = stack.broker.exchange(&token, &json!({ "roles": ["read-config"] })).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("token_replayed")), "{answer}");

    // A token spent now is spent under its legacy id too: a replica still on the release before
    // refuses it during a rolling upgrade.
    let fresh_claims = claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| c["iat"] = json!(exp - 400));
    let fresh = stack.buildkite.sign(&fresh_claims).unwrap();
    let (status, answer) = stack.broker.exchange(&fresh, &json!({ "roles": ["read-config"] })).await;
    assert_eq!(status, 200, "{answer}");
    let fresh_legacy = format!("sha256:{}", token_sha256(&fresh));
    assert!(!stack.store().await.record_exchange("buildkite", &fresh_legacy, exp).await.unwrap(), "already spent");
}
