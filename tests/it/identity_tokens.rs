//! One test per way a CI token can be wrong, each built from a fixture with one thing changed.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ci_creds::ci::CiKind;
use ci_creds::ci::{DangerousTrigger, FactSource, Sourced};
use ci_creds::dev::{DevIssuer, SigningKey};
use ci_creds::identity::{Error, IssuerConfig, Verifier};
use ci_creds::net::HttpClient;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::support::{AUDIENCE, claims_for, github_token, start_issuer};

fn verifier_for(issuer: &DevIssuer, kind: CiKind, algorithms: Vec<Algorithm>) -> Verifier {
    let config = IssuerConfig {
        name: format!("{kind:?}").to_lowercase(),
        kind,
        issuer: issuer.url().to_owned(),
        jwks_url: None,
        algorithms,
        max_token_lifetime: None,
        audience: None,
        claim_names: Default::default(),
        controller_url: None,
    };
    Verifier::new(AUDIENCE.into(), vec![config], HttpClient::new().unwrap())
}

async fn github() -> (Arc<DevIssuer>, Verifier) {
    let issuer = start_issuer().await;
    let verifier = verifier_for(&issuer, CiKind::Github, vec![Algorithm::RS256]);
    (issuer, verifier)
}

fn unsigned(header: &Value, claims: &Value, signature: &str) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
    format!("{}.{}.{signature}", part(header), part(claims))
}

fn assert_invalid(result: Result<ci_creds::ci::Job, Error>, what: &str) {
    match result {
        Err(
            Error::Invalid(_)
            | Error::Malformed(_)
            | Error::AlgorithmNotAllowed(_)
            | Error::AlgorithmKeyMismatch { .. },
        )
        | Err(Error::MissingClaim(_) | Error::WrongClaimType(_) | Error::UnknownKey) => {}
        other => panic!("{what}: expected the token to be refused as invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn accepts_github_fixture_and_maps_its_claims() {
    let (issuer, verifier) = github().await;
    let job = verifier.verify(&github_token(&issuer, |_| {})).await.expect("valid token");
    assert_eq!(job.issuer, "github");
    assert_eq!(job.job_id, "289782451");
    assert_eq!(job.repository, "octo-org/octo-repo");
    assert_eq!(job.repository_id.as_deref(), Some("74"));
    assert_eq!(job.owner_id.as_deref(), Some("65"));
    assert_eq!(job.git_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(job.event.as_deref(), Some("workflow_dispatch"));
    assert_eq!(job.environment.as_deref(), Some("prod"));
    assert_eq!(job.runner_environment.as_deref(), Some("github-hosted"));
    assert!(job.token_id.starts_with("jti:"), "identified by its jti: {}", job.token_id);
    assert_eq!(job.dangerous_trigger, None);
}

#[tokio::test]
async fn flags_pull_request_target_as_dangerous() {
    let (issuer, verifier) = github().await;
    let token = github_token(&issuer, |c| c["event_name"] = json!("pull_request_target"));
    let job = verifier.verify(&token).await.unwrap();
    assert_eq!(job.dangerous_trigger, Some(DangerousTrigger::Event("pull_request_target".into())));
}

#[tokio::test]
async fn maps_gitlab_fixture_onto_the_project_the_job_runs_in() {
    let issuer = start_issuer().await;
    let verifier = verifier_for(&issuer, CiKind::Gitlab, vec![Algorithm::RS256]);
    let token = issuer.sign(&claims_for(&issuer, "gitlab-token-claims.json", |_| {})).unwrap();
    let job = verifier.verify(&token).await.expect("valid token");
    assert_eq!(job.job_id, "302");
    assert_eq!(job.repository, "my-group/my-project");
    assert_eq!(job.repository_id.as_deref(), Some("20"));
    assert_eq!(job.git_ref.as_deref(), Some("refs/heads/feature-branch-1"));
    assert_eq!(job.ref_protected, Some(false));
    let runner_id = job.runner.id.as_ref().map(|id| (id.value.as_str(), id.source));
    assert_eq!(runner_id, Some(("1", FactSource::Token)));
    assert_eq!(job.dangerous_trigger, None);

    let fork = issuer
        .sign(&claims_for(&issuer, "gitlab-token-claims.json", |c| c["project_path"] = json!("fork-owner/my-project")))
        .unwrap();
    let job = verifier.verify(&fork).await.unwrap();
    assert_eq!(job.repository, "my-group/my-project");
    assert!(matches!(job.dangerous_trigger, Some(DangerousTrigger::ForeignClaim { claim: "project_path", .. })));
}

#[tokio::test]
async fn identifies_a_buildkite_token_without_jti_by_its_signed_part() {
    let issuer = start_issuer().await;
    let verifier = verifier_for(&issuer, CiKind::Buildkite, vec![Algorithm::RS256]);
    let token = issuer.sign(&claims_for(&issuer, "buildkite-token-claims.json", |_| {})).unwrap();
    let job = verifier.verify(&token).await.expect("valid token");
    assert_eq!(job.job_id, "0184990a-477b-4fa8-9968-496074483cee");
    assert_eq!(job.repository, "acme-inc/super-duper-app");
    assert_eq!(job.git_ref.as_deref(), Some("refs/heads/main"));
    let (signed, _) = token.rsplit_once('.').unwrap();
    assert_eq!(job.token_id, format!("signed-sha256:{}", ci_creds::identity::token_sha256(signed)));
    assert_eq!(job.legacy_token_id, Some(format!("sha256:{}", ci_creds::identity::token_sha256(&token))));
    let told = |value: &str| Some(Sourced::new(value.to_owned(), FactSource::Token));
    assert_eq!(job.runner.id, told("0184990a-4782-42b5-afc1-16715b10b8ff"));
    assert_eq!((job.runner.queue.clone(), job.runner.labels.clone()), (None, None), "no optional claim asked for");
}

/// ECDSA is malleable: (r, n − s) verifies wherever (r, s) does. Without `jti`, both texts must
/// name one token, or it could be spent twice.
#[tokio::test]
async fn an_es256_token_without_jti_keeps_its_id_when_its_s_becomes_n_minus_s() {
    let issuer = DevIssuer::start("127.0.0.1:0".parse().unwrap(), SigningKey::generate_es256().unwrap()).await.unwrap();
    let verifier = verifier_for(&issuer, CiKind::Circleci, vec![Algorithm::ES256]);
    let token = issuer.sign(&claims_for(&issuer, "circleci-token-claims.json", |_| {})).unwrap();
    let malleated = crate::support::ecdsa::with_s_negated(&token);
    assert_ne!(malleated, token);
    let job = verifier.verify(&token).await.expect("valid token");
    let twin = verifier.verify(&malleated).await.expect("n − s verifies too");
    assert!(job.token_id.starts_with("signed-sha256:"), "{}", job.token_id);
    assert_eq!(twin.token_id, job.token_id, "one token, one replay id");
    assert_ne!(twin.legacy_token_id, job.legacy_token_id, "the whole text's hash told them apart");
}

#[tokio::test]
async fn reads_buildkite_s_optional_runner_claims_when_the_job_asked_for_them() {
    let issuer = start_issuer().await;
    let verifier = verifier_for(&issuer, CiKind::Buildkite, vec![Algorithm::RS256]);
    let token = issuer
        .sign(&claims_for(&issuer, "buildkite-token-claims.json", |c| {
            c["cluster_name"] = json!("release");
            c["queue_key"] = json!("deploy");
            c["agent_tag:os"] = json!("linux");
            c["agent_tag:size"] = json!("large");
        }))
        .unwrap();
    let runner = verifier.verify(&token).await.expect("valid token").runner;
    let told = |value: &str| Some(Sourced::new(value.to_owned(), FactSource::Token));
    assert_eq!((runner.group, runner.queue), (told("release"), told("deploy")));
    let labels = runner.labels.expect("agent tags");
    assert_eq!(
        (labels.value, labels.source),
        (vec!["os=linux".to_owned(), "size=large".to_owned()], FactSource::Token)
    );
}

#[tokio::test]
async fn rejects_unknown_issuer_without_any_request() {
    let (pinned, verifier) = github().await;
    let stranger = start_issuer().await;
    let token = stranger.sign(&claims_for(&stranger, "github-token-claims.json", |_| {})).unwrap();
    assert!(matches!(verifier.verify(&token).await, Err(Error::UnknownIssuer)));
    assert_eq!(stranger.discovery_fetches() + stranger.jwks_fetches(), 0, "nothing fetched from the token's issuer");
    assert_eq!(pinned.discovery_fetches() + pinned.jwks_fetches(), 0, "nothing fetched at all");
}

#[tokio::test]
async fn rejects_alg_none() {
    let (issuer, verifier) = github().await;
    let claims = claims_for(&issuer, "github-token-claims.json", |_| {});
    let token = unsigned(&json!({"alg": "none", "typ": "JWT", "kid": issuer.current_key().kid}), &claims, "");
    assert_invalid(verifier.verify(&token).await, "alg none");
}

#[tokio::test]
async fn rejects_hs256_signed_with_the_public_key() {
    let (issuer, verifier) = github().await;
    let key = issuer.current_key();
    let public = serde_json::to_vec(key.jwk()).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(key.kid.clone());
    let claims = claims_for(&issuer, "github-token-claims.json", |_| {});
    let token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(&public).unwrap()).unwrap();
    assert!(matches!(verifier.verify(&token).await, Err(Error::AlgorithmNotAllowed(_))));
}

#[tokio::test]
async fn rejects_an_alg_that_does_not_fit_the_key() {
    let issuer = start_issuer().await;
    let verifier = verifier_for(&issuer, CiKind::Github, vec![Algorithm::RS256, Algorithm::ES256]);
    let rsa_kid = issuer.current_key().kid.clone();
    let ec = SigningKey::generate_es256().unwrap();
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(rsa_kid);
    let token = ec.sign_with_header(&header, &claims_for(&issuer, "github-token-claims.json", |_| {})).unwrap();
    assert!(matches!(verifier.verify(&token).await, Err(Error::AlgorithmKeyMismatch { .. })));
}

#[tokio::test]
async fn accepts_es256_only_when_configured() {
    let issuer = start_issuer().await;
    issuer.rotate(SigningKey::generate_es256().unwrap(), false);
    let token = github_token(&issuer, |_| {});
    let rs_only = verifier_for(&issuer, CiKind::Github, vec![Algorithm::RS256]);
    assert!(matches!(rs_only.verify(&token).await, Err(Error::AlgorithmNotAllowed(_))));
    let with_es = verifier_for(&issuer, CiKind::Github, vec![Algorithm::RS256, Algorithm::ES256]);
    with_es.verify(&token).await.expect("ES256 allowed by config");
}

#[tokio::test]
async fn rejects_a_bad_signature() {
    let (issuer, verifier) = github().await;
    let forger = SigningKey::generate_rs256().unwrap();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(issuer.current_key().kid.clone());
    let token = forger.sign_with_header(&header, &claims_for(&issuer, "github-token-claims.json", |_| {})).unwrap();
    assert!(matches!(verifier.verify(&token).await, Err(Error::Invalid(_))));
}

#[tokio::test]
async fn rejects_a_symmetric_key_from_the_jwks() {
    let (issuer, verifier) = github().await;
    let claims = claims_for(&issuer, "github-token-claims.json", |_| {});
    // The dev issuer publishes an `oct` key with kid "symmetric" (secret "secret").
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("symmetric".into());
    let token = issuer.current_key().sign_with_header(&header, &claims).unwrap();
    assert!(matches!(verifier.verify(&token).await, Err(Error::UnknownKey)));
}
