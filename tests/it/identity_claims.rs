//! Time, audience and claim-shape checks on otherwise valid tokens.

use ci_creds::ci::CiKind;
use ci_creds::identity::{Error, IssuerConfig, Verifier};
use ci_creds::net::HttpClient;
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

use crate::support::{AUDIENCE, github_token, start_issuer};

async fn verify_github(edit: impl FnOnce(&mut Value)) -> Result<ci_creds::ci::Job, Error> {
    let issuer = start_issuer().await;
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
    let verifier = Verifier::new(AUDIENCE.into(), vec![config], HttpClient::new().unwrap());
    verifier.verify(&github_token(&issuer, edit)).await
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

#[tokio::test]
async fn rejects_expired() {
    let result = verify_github(|c| c["exp"] = json!(now() - 120)).await;
    assert!(matches!(result, Err(Error::Invalid(ref m)) if m.contains("expired")), "{result:?}");
}

#[tokio::test]
async fn accepts_expiry_within_the_skew() {
    verify_github(|c| c["exp"] = json!(now() - 30)).await.expect("30 s of skew is tolerated");
}

#[tokio::test]
async fn rejects_missing_exp() {
    let result = verify_github(|c| {
        c.as_object_mut().unwrap().remove("exp");
    })
    .await;
    assert!(matches!(result, Err(Error::Invalid(_))), "{result:?}");
}

#[tokio::test]
async fn rejects_exp_of_the_wrong_type() {
    let result = verify_github(|c| c["exp"] = json!((now() + 300).to_string())).await;
    assert!(result.is_err(), "a string exp is refused, not coerced");
}

#[tokio::test]
async fn rejects_not_yet_valid() {
    let result = verify_github(|c| c["nbf"] = json!(now() + 300)).await;
    assert!(matches!(result, Err(Error::Invalid(ref m)) if m.contains("nbf")), "{result:?}");
}

#[tokio::test]
async fn rejects_issued_in_the_future() {
    let result = verify_github(|c| c["iat"] = json!(now() + 300)).await;
    assert!(matches!(result, Err(Error::Invalid(ref m)) if m.contains("future")), "{result:?}");
}

#[tokio::test]
async fn rejects_the_ci_default_audience() {
    let result = verify_github(|c| c["aud"] = json!("https://github.com/octo-org")).await;
    assert!(matches!(result, Err(Error::Invalid(ref m)) if m.contains("audience")), "{result:?}");
}

#[tokio::test]
async fn accepts_an_audience_list_containing_ours() {
    verify_github(|c| c["aud"] = json!(["https://github.com/octo-org", AUDIENCE])).await.expect("list with ours");
}

#[tokio::test]
async fn rejects_an_audience_that_only_resembles_ours() {
    let result = verify_github(|c| c["aud"] = json!(format!("{AUDIENCE}.evil"))).await;
    assert!(result.is_err());
}

#[tokio::test]
async fn rejects_missing_aud() {
    let result = verify_github(|c| {
        c.as_object_mut().unwrap().remove("aud");
    })
    .await;
    assert!(matches!(result, Err(Error::Invalid(_))), "{result:?}");
}

#[tokio::test]
async fn rejects_a_numeric_repository_id() {
    let result = verify_github(|c| c["repository_id"] = json!(74)).await;
    assert!(matches!(result, Err(Error::WrongClaimType(_))), "{result:?}");
}

#[tokio::test]
async fn rejects_a_token_without_job_id() {
    let result = verify_github(|c| {
        c.as_object_mut().unwrap().remove("check_run_id");
    })
    .await;
    assert!(matches!(result, Err(Error::MissingClaim("check_run_id"))), "{result:?}");
}

#[tokio::test]
async fn rejects_a_token_without_repository() {
    let result = verify_github(|c| {
        c.as_object_mut().unwrap().remove("repository");
    })
    .await;
    assert!(matches!(result, Err(Error::MissingClaim("repository"))), "{result:?}");
}

#[tokio::test]
async fn keeps_unicode_claims_intact() {
    let job = verify_github(|c| c["actor"] = json!("ôctocat-🐙")).await.expect("unicode is fine");
    assert_eq!(job.claims["actor"], json!("ôctocat-🐙"));
}
