//! `ci-creds dev token --count N`: N tokens, one a line, each signed by the local issuer's key with
//! its own `jti`, and `{n}` in a `--set` override replaced by the token's index, as the load
//! benchmark uses it to give every token its own job.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Output};

use ci_creds::dev::SigningKey;
use jsonwebtoken::{DecodingKey, Validation, jwk::Jwk};
use serde_json::Value;

const AUDIENCE: &str = "https://ci-creds.example";
const ISSUER: &str = "http://127.0.0.1:1";

/// A directory as `ci-creds dev issuer` leaves it: its key and its URL.
fn issuer_dir() -> (tempfile::TempDir, SigningKey) {
    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::generate_rs256().unwrap();
    std::fs::write(dir.path().join("signing-key.pem"), key.pkcs8_pem()).unwrap();
    std::fs::write(dir.path().join("issuer-url"), ISSUER).unwrap();
    (dir, key)
}

fn dev_token(dir: &Path, extra: &[&str]) -> Output {
    let claims = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/dev/github-claims.json");
    Command::new(env!("CARGO_BIN_EXE_ci-creds"))
        .args(["dev", "token", "--audience", AUDIENCE, "--dir"])
        .arg(dir)
        .arg("--claims")
        .arg(claims)
        .args(extra)
        .env("RUST_LOG", "off")
        .output()
        .expect("binary runs")
}

/// The claims of each line of `output`, whose signature the issuer's key verifies.
fn verified_claims(output: &Output, key: &SigningKey) -> Vec<Value> {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let jwk: Jwk = serde_json::from_value(key.jwk().clone()).unwrap();
    let decoding = DecodingKey::from_jwk(&jwk).unwrap();
    let mut validation = Validation::new(key.alg);
    validation.set_audience(&[AUDIENCE]);
    validation.set_issuer(&[ISSUER]);
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|token| jsonwebtoken::decode::<Value>(token, &decoding, &validation).expect("a valid token").claims)
        .collect()
}

#[test]
fn count_prints_distinct_tokens_each_with_its_own_jti_and_index() {
    let (dir, key) = issuer_dir();
    let output = dev_token(dir.path(), &["--count", "25", "--set", "check_run_id={n}", "--set", "run_id=run-{n}"]);
    let claims = verified_claims(&output, &key);
    assert_eq!(claims.len(), 25);
    for (n, claims) in claims.iter().enumerate() {
        assert_eq!(claims["check_run_id"], Value::String(n.to_string()), "the index stays a string claim");
        assert_eq!(claims["run_id"], Value::String(format!("run-{n}")));
        assert_eq!(claims["repository"], "octo-org/octo-repo", "the fixture's other claims are kept");
    }
    let jtis: HashSet<&str> = claims.iter().map(|claims| claims["jti"].as_str().expect("a jti")).collect();
    assert_eq!(jtis.len(), 25, "every token has its own jti");
    let tokens: HashSet<&str> = std::str::from_utf8(&output.stdout).unwrap().lines().collect();
    assert_eq!(tokens.len(), 25);
}

#[test]
fn one_token_by_default_with_overrides_as_written() {
    let (dir, key) = issuer_dir();
    let output = dev_token(dir.path(), &["--set", "check_run_id={n}", "--set", "run_attempt=3"]);
    let claims = verified_claims(&output, &key);
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["check_run_id"], "0");
    assert_eq!(claims[0]["run_attempt"], 3, "a VALUE that parses as JSON keeps its JSON type");
}

#[test]
fn an_override_without_equals_sign_is_refused() {
    let (dir, _) = issuer_dir();
    let output = dev_token(dir.path(), &["--count", "3", "--set", "check_run_id"]);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "no token is printed");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--set takes NAME=VALUE"));
}
