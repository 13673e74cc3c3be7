//! The issuer's keys: cached, refreshed on an unknown `kid` at most once per cooldown, rotated
//! keys picked up without a restart; and malformed tokens refused before any key is fetched.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ci_creds::ci::CiKind;
use ci_creds::dev::{DevIssuer, SigningKey};
use ci_creds::identity::{Error, IssuerConfig, REFRESH_COOLDOWN, Verifier};
use ci_creds::net::HttpClient;
use jsonwebtoken::{Algorithm, Header};
use serde_json::json;

use crate::support::{AUDIENCE, claims_for, github_token, start_issuer};

const TEST_COOLDOWN: Duration = Duration::from_millis(600);

fn verifier(issuer: &DevIssuer) -> Verifier {
    let config = IssuerConfig {
        name: "github".into(),
        kind: CiKind::Github,
        issuer: issuer.url().to_owned(),
        jwks_url: None,
        algorithms: vec![Algorithm::RS256],
        max_token_lifetime: None,
        audience: None,
        claim_names: Default::default(),
        controller_url: None,
    };
    Verifier::new(AUDIENCE.into(), vec![config], HttpClient::new().unwrap()).with_refresh_cooldown(TEST_COOLDOWN)
}

fn token_with_kid(issuer: &DevIssuer, kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    issuer.current_key().sign_with_header(&header, &claims_for(issuer, "github-token-claims.json", |_| {})).unwrap()
}

#[test]
fn the_production_cooldown_is_thirty_seconds() {
    assert_eq!(REFRESH_COOLDOWN, Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread")]
async fn caches_keys_across_tokens() {
    let issuer = start_issuer().await;
    let verifier = verifier(&issuer);
    for _ in 0..5 {
        verifier.verify(&github_token(&issuer, |_| {})).await.expect("valid");
    }
    assert_eq!(issuer.jwks_fetches(), 1, "one fetch serves every token");
}

#[tokio::test(flavor = "multi_thread")]
async fn refreshes_on_an_unknown_kid_at_most_once_per_cooldown() {
    let issuer = start_issuer().await;
    let verifier = verifier(&issuer);
    verifier.verify(&github_token(&issuer, |_| {})).await.expect("valid");
    for _ in 0..10 {
        let result = verifier.verify(&token_with_kid(&issuer, "not-published")).await;
        assert!(matches!(result, Err(Error::UnknownKey)), "{result:?}");
    }
    assert_eq!(issuer.jwks_fetches(), 1, "unknown kids within the cooldown fetch nothing");

    tokio::time::sleep(TEST_COOLDOWN + Duration::from_millis(100)).await;
    let result = verifier.verify(&token_with_kid(&issuer, "still-not-published")).await;
    assert!(matches!(result, Err(Error::UnknownKey)));
    assert_eq!(issuer.jwks_fetches(), 2, "after the cooldown an unknown kid refreshes once");
    let _ = verifier.verify(&token_with_kid(&issuer, "again-not-published")).await;
    assert_eq!(issuer.jwks_fetches(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_unknown_kids_cause_one_refresh() {
    let issuer = start_issuer().await;
    let verifier = std::sync::Arc::new(verifier(&issuer));
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let (verifier, token) = (verifier.clone(), token_with_kid(&issuer, &format!("kid-{i}")));
            tokio::spawn(async move { verifier.verify(&token).await.is_err() })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap());
    }
    assert_eq!(issuer.jwks_fetches(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn picks_up_a_rotated_key_without_restart() {
    let issuer = start_issuer().await;
    let verifier = verifier(&issuer);
    verifier.verify(&github_token(&issuer, |_| {})).await.expect("old key");
    issuer.rotate(SigningKey::generate_rs256().unwrap(), true);
    tokio::time::sleep(TEST_COOLDOWN + Duration::from_millis(100)).await;
    verifier.verify(&github_token(&issuer, |_| {})).await.expect("the rotated key is fetched and trusted");
    assert_eq!(issuer.jwks_fetches(), 2);
}

#[tokio::test]
async fn rejects_malformed_tokens_without_fetching_keys() {
    let issuer = start_issuer().await;
    let verifier = verifier(&issuer);
    let huge_kid = "k".repeat(1024 * 1024);
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": huge_kid}).to_string());
    let claims = URL_SAFE_NO_PAD.encode(json!({"iss": issuer.url()}).to_string());
    let cases = [
        String::new(),
        "...".into(),
        "a.b.c".into(),
        "not a jwt".into(),
        format!("{header}.{claims}.sig"),
        format!("{}.{claims}.sig", URL_SAFE_NO_PAD.encode("{\"alg\":\"RS256\"}")),
        format!("{}.{}.", URL_SAFE_NO_PAD.encode("{}"), URL_SAFE_NO_PAD.encode("[]")),
        "é.🐙.ü".into(),
    ];
    for token in &cases {
        let result = verifier.verify(token).await;
        assert!(matches!(result, Err(Error::Malformed(_))), "{:.40}: {result:?}", token);
    }
    assert_eq!(issuer.jwks_fetches(), 0);
}
