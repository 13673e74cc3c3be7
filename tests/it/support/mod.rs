//! What integration tests start: a real OpenBao dev server, a loopback OIDC issuer signing
//! tokens shaped like the CI fixtures, and the broker binary itself.
#![allow(dead_code)]

pub mod aws_stack;
pub mod azure_devops;
pub mod bao;
pub mod broker;
pub mod ci_api;
pub mod ci_job;
pub mod crash;
pub mod ecdsa;
pub mod github_api;
pub mod in_process;
pub mod jenkins;
pub mod kubernetes;
pub mod login_stack;
pub mod moto;
pub mod postgres;
pub mod proxy;
pub mod stack;
pub mod store;
pub mod webhooks;

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ci_creds::dev::{DevIssuer, SigningKey, live_claims};
use serde_json::Value;

pub const AUDIENCE: &str = "https://ci-creds.example";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free loopback port")
}

/// A CI system's documented token claims, from `tests/fixtures/`.
pub fn fixture(name: &str) -> Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

pub async fn start_issuer() -> Arc<DevIssuer> {
    let key = SigningKey::generate_rs256().expect("RSA key");
    DevIssuer::start("127.0.0.1:0".parse().unwrap(), key).await.expect("issuer starts")
}

/// The fixture's claims, live for `issuer` and the broker's audience, with `edit` applied.
pub fn claims_for(issuer: &DevIssuer, fixture_name: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut claims = live_claims(&fixture(fixture_name), issuer.url(), AUDIENCE, 300);
    edit(&mut claims);
    claims
}

pub fn github_token(issuer: &DevIssuer, edit: impl FnOnce(&mut Value)) -> String {
    issuer.sign(&claims_for(issuer, "github-token-claims.json", edit)).expect("signs")
}

pub async fn wait_until<F, Fut>(what: &str, ready: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    assert!(eventually(ready).await, "{what} did not become ready in 15 s");
}

/// Whether `ready` holds within 15 s.
pub async fn eventually<F, Fut>(mut ready: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..300 {
        if ready().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
