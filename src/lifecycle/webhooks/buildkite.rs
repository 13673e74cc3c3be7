//! Buildkite `job.finished` webhooks, signed (`X-Buildkite-Signature`) or carrying the token.

use axum::http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::signature::{hmac_sha256_matches, token_matches};
use super::{Verdict, header, parse};
use crate::lifecycle::Error;

/// How old (or how far in the future) a signature's timestamp may be: bounds replays.
const MAX_SIGNATURE_AGE_SECONDS: i64 = 300;

#[derive(Deserialize)]
struct Delivery {
    job: Job,
}

#[derive(Deserialize)]
struct Job {
    id: String,
}

pub fn read(headers: &HeaderMap, body: &[u8], token: &SecretString) -> Result<Verdict, Error> {
    if !authentic(headers, body, token) {
        return Err(Error::InvalidSignature);
    }
    let event = header(headers, "x-buildkite-event").unwrap_or_default();
    if event != "job.finished" {
        return Ok(Verdict::Ignore(format!("event `{event}` is not job.finished")));
    }
    let delivery: Delivery = parse(body)?;
    if delivery.job.id.is_empty() {
        return Err(Error::InvalidRequest("`job.id` is empty".into()));
    }
    Ok(Verdict::End { job_id: delivery.job.id, delivery_id: None })
}

fn authentic(headers: &HeaderMap, body: &[u8], token: &SecretString) -> bool {
    if let Some(signature) = header(headers, "x-buildkite-signature") {
        return signature_matches(signature, body, token);
    }
    header(headers, "x-buildkite-token").is_some_and(|presented| token_matches(token, presented))
}

/// `timestamp=T,signature=HEX` where HEX is the HMAC-SHA256 of `T.body`, T within 5 minutes.
fn signature_matches(value: &str, body: &[u8], token: &SecretString) -> bool {
    let mut timestamp = None;
    let mut signature = None;
    for part in value.split(',') {
        match part.trim().split_once('=') {
            Some(("timestamp", t)) => timestamp = Some(t),
            Some(("signature", s)) => signature = Some(s),
            _ => {}
        }
    }
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else { return false };
    let Ok(at) = timestamp.parse::<i64>() else { return false };
    if (crate::store::now() - at).abs() > MAX_SIGNATURE_AGE_SECONDS {
        return false;
    }
    hmac_sha256_matches(token, &[timestamp.as_bytes(), b".", body], signature)
}
