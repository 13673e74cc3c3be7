//! Webhook deliveries as each CI system sends them, built from the shared fixtures.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::broker::{BUILDKITE_WEBHOOK_TOKEN, GITHUB_WEBHOOK_SECRET, GITLAB_WEBHOOK_TOKEN};

pub fn hmac_hex(key: &str, message: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(message);
    hex::encode(mac.finalize().into_bytes())
}

/// Headers of a signed GitHub `workflow_job` delivery.
pub fn github_headers(body: &[u8], delivery: &str) -> Vec<(&'static str, String)> {
    vec![
        ("x-github-event", "workflow_job".into()),
        ("x-github-delivery", delivery.into()),
        ("x-hub-signature-256", format!("sha256={}", hmac_hex(GITHUB_WEBHOOK_SECRET, body))),
        ("content-type", "application/json".into()),
    ]
}

pub fn gitlab_headers() -> Vec<(&'static str, String)> {
    vec![("x-gitlab-event", "Job Hook".into()), ("x-gitlab-token", GITLAB_WEBHOOK_TOKEN.into())]
}

/// Headers of a Buildkite `job.finished` delivery signed at `timestamp`.
pub fn buildkite_signed_headers(body: &[u8], timestamp: i64) -> Vec<(&'static str, String)> {
    let mut message = format!("{timestamp}.").into_bytes();
    message.extend_from_slice(body);
    let signature = hmac_hex(BUILDKITE_WEBHOOK_TOKEN, &message);
    vec![
        ("x-buildkite-event", "job.finished".into()),
        ("x-buildkite-signature", format!("timestamp={timestamp},signature={signature}")),
    ]
}

pub fn body(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}
