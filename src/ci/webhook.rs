//! What every CI's webhooks share: what a delivery asks for, how it is refused, and the
//! constant-time checks of signatures and shared tokens.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use http::HeaderMap;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use thiserror::Error;

use crate::ci::CiKind;
use crate::ci::RunnerFacts;

/// What a delivery asks for, once authenticated.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The job has ended; the delivery may also name the runner it ran on.
    End {
        job_id: String,
        delivery_id: Option<String>,
        runner: Option<RunnerFacts>,
        /// The jobs within this one end with it: those whose id is `{job_id}/…` (an Azure
        /// Pipelines run's jobs).
        jobs_within: bool,
    },
    /// The job has started on this runner: a fact to record, not an end.
    Started {
        job_id: String,
        runner: RunnerFacts,
    },
    Ignore(String),
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WebhookError {
    /// Not signed, or not with the configured secret.
    #[error("the webhook's signature or token is missing or wrong")]
    InvalidSignature,
    #[error("{0}")]
    InvalidRequest(String),
}

/// A header's value as text, if present and printable.
pub fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

pub fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, WebhookError> {
    serde_json::from_slice(body)
        .map_err(|e| WebhookError::InvalidRequest(format!("the webhook body does not parse: {e}")))
}

/// Whether `signature_hex` is the HMAC-SHA256 of `message` under `key`.
pub fn hmac_sha256_matches(key: &SecretString, message: &[&[u8]], signature_hex: &str) -> bool {
    let Ok(signature) = hex::decode(signature_hex) else { return false };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key.expose_secret().as_bytes()) else { return false };
    for part in message {
        mac.update(part);
    }
    mac.verify_slice(&signature).is_ok()
}

/// Whether a presented shared token equals the configured one, in constant time.
pub fn token_matches(expected: &SecretString, presented: &str) -> bool {
    expected.expose_secret().as_bytes().ct_eq(presented.as_bytes()).into()
}

/// Whether `Authorization: Basic …` holds exactly the configured `user:password`, in constant
/// time: how CIs that sign nothing (Jenkins' Notification plugin, Azure DevOps' service hooks)
/// authenticate a delivery.
pub fn basic_credentials_match(headers: &HeaderMap, credentials: &SecretString) -> bool {
    let Some(encoded) = header(headers, "authorization").and_then(|value| value.strip_prefix("Basic ")) else {
        return false;
    };
    let Ok(decoded) = STANDARD.decode(encoded.trim()) else { return false };
    let Ok(presented) = String::from_utf8(decoded) else { return false };
    token_matches(credentials, &presented)
}

/// The source of runner facts a CI's webhook told: `webhook:<name>`.
pub fn told_by_webhook(kind: CiKind) -> String {
    format!("webhook:{}", kind.name())
}
