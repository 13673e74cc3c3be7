//! The verifier with fixed keys: what it accepts and refuses before any claim is mapped.

use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::ci::CiKind;
use crate::dev::SigningKey;

const ISSUER: &str = "https://token.actions.githubusercontent.com";
const AUDIENCE: &str = "https://ci-creds.example";

/// A verifier of one GitHub issuer holding the keys of `jwks`, never fetching any: nothing
/// listens at its `jwks_url`, so a fetch would fail the test.
fn verifier(jwks: &Value, algorithm: Algorithm, max_token_lifetime: Option<Duration>) -> Verifier {
    let issuer = IssuerConfig {
        name: "github".into(),
        kind: CiKind::Github,
        issuer: ISSUER.into(),
        jwks_url: Some("https://127.0.0.1:1/jwks".into()),
        algorithms: vec![algorithm],
        max_token_lifetime,
        audience: None,
        claim_names: Default::default(),
        controller_url: None,
    };
    let keys = FixedKeys::from_jwks([(ISSUER, jwks)]).unwrap();
    Verifier::with_fixed_keys(AUDIENCE.into(), vec![issuer], keys)
}

/// A GitHub job's claims for this broker, expiring at `exp`.
fn claims(exp: i64) -> Value {
    json!({
        "iss": ISSUER, "aud": AUDIENCE, "exp": exp, "jti": "j-1",
        "check_run_id": "289782451", "repository": "octo-org/octo-repo",
    })
}

fn now() -> i64 {
    jsonwebtoken::get_current_timestamp() as i64
}

fn fixture(name: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::read_to_string(dir.join(name)).expect("fixture readable")
}

#[tokio::test]
async fn fixed_keys_verify_a_token_without_any_fetch_and_refuse_a_key_they_do_not_hold() {
    let key = SigningKey::generate_es256().unwrap();
    let verifier = verifier(&json!({ "keys": [key.jwk()] }), Algorithm::ES256, None);
    let claims = claims(now() + 300);
    let job = verifier.verify(&key.sign(&claims).unwrap()).await.unwrap();
    assert_eq!((job.job_id.as_str(), job.token_id.as_str()), ("289782451", "jti:j-1"));

    let stranger = SigningKey::generate_es256().unwrap();
    let refused = verifier.verify(&stranger.sign(&claims).unwrap()).await;
    assert!(matches!(refused, Err(Error::UnknownKey)), "{refused:?}");
}

#[tokio::test]
async fn a_key_whose_modulus_keeps_a_leading_zero_octet_verifies_its_signatures_and_only_those() {
    // Jenkins' JWKS writes `n` as Java's BigInteger.toByteArray(): 257 octets, the first 0.
    let jwks: Value = serde_json::from_str(&fixture("jenkins-jwks-leading-zero.json")).unwrap();
    let signing = jsonwebtoken::EncodingKey::from_rsa_pem(fixture("jenkins-signing-key.pem").as_bytes()).unwrap();
    let verifier = verifier(&jwks, Algorithm::RS256, None);
    let mut header = jsonwebtoken::Header::new(Algorithm::RS256);
    header.kid = Some("ci-creds-id-token".into());
    let token = jsonwebtoken::encode(&header, &claims(now() + 300), &signing).unwrap();
    let job = verifier.verify(&token).await.expect("the issuer's own signature verifies");
    assert_eq!(job.job_id, "289782451");

    let (signed, signature) = token.rsplit_once('.').unwrap();
    let mut forged = signature.as_bytes().to_vec();
    forged[10] = if forged[10] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{signed}.{}", String::from_utf8(forged).unwrap());
    assert!(matches!(verifier.verify(&tampered).await, Err(Error::Invalid(_))), "a wrong signature still fails");
    let other_claims = token.replacen(signed.split('.').nth(1).unwrap(), "eyJmb28iOiJiYXIifQ", 1);
    assert!(verifier.verify(&other_claims).await.is_err(), "changed claims fail");
}

#[tokio::test]
async fn a_token_minted_to_live_longer_than_max_token_lifetime_is_refused() {
    let key = SigningKey::generate_es256().unwrap();
    let verifier = verifier(&json!({ "keys": [key.jwk()] }), Algorithm::ES256, Some(Duration::from_secs(600)));
    let now = now();
    let token = |iat: Option<i64>, exp: i64| {
        let mut claims = claims(exp);
        if let Some(iat) = iat {
            claims["iat"] = json!(iat);
        }
        key.sign(&claims).unwrap()
    };
    assert!(verifier.verify(&token(Some(now - 60), now + 540)).await.is_ok(), "ten minutes, as allowed");
    for (case, iat, exp) in [("an hour", Some(now - 60), now + 3540), ("no iat", None, now + 300)] {
        let refused = verifier.verify(&token(iat, exp)).await;
        let about_lifetime = matches!(&refused, Err(Error::Invalid(reason)) if reason.contains("max_token_lifetime"));
        assert!(about_lifetime, "{case}: {refused:?}");
    }
}
