//! Buildkite `job.finished` (an end) and `job.started` (the agent it runs on) webhooks, signed
//! (`X-Buildkite-Signature`) or carrying the token.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use crate::ci::CiKind;
use crate::ci::RunnerFacts;
use crate::ci::webhook::{Verdict, WebhookError, header, hmac_sha256_matches, parse, token_matches, told_by_webhook};

/// How old (or how far in the future) a signature's timestamp may be: bounds replays.
const MAX_SIGNATURE_AGE_SECONDS: u64 = 300;

#[derive(Deserialize)]
struct Delivery {
    job: Job,
}

#[derive(Deserialize)]
struct Job {
    id: String,
    #[serde(default)]
    agent: Option<Agent>,
}

#[derive(Deserialize)]
struct Agent {
    id: String,
    #[serde(default)]
    name: Option<String>,
}

impl Agent {
    fn facts(self) -> RunnerFacts {
        RunnerFacts {
            id: Some(self.id),
            name: self.name,
            source: told_by_webhook(CiKind::Buildkite),
            ..RunnerFacts::default()
        }
        .bounded()
    }
}

pub fn read(headers: &HeaderMap, body: &[u8], token: &SecretString) -> Result<Verdict, WebhookError> {
    if !authentic(headers, body, token) {
        return Err(WebhookError::InvalidSignature);
    }
    let event = header(headers, "x-buildkite-event").unwrap_or_default();
    if event != "job.finished" && event != "job.started" {
        return Ok(Verdict::Ignore(format!("event `{event}` is neither job.finished nor job.started")));
    }
    let delivery: Delivery = parse(body)?;
    if delivery.job.id.is_empty() {
        return Err(WebhookError::InvalidRequest("`job.id` is empty".into()));
    }
    let runner = delivery.job.agent.map(Agent::facts);
    match (event, runner) {
        ("job.started", Some(runner)) => Ok(Verdict::Started { job_id: delivery.job.id, runner }),
        ("job.started", None) => Ok(Verdict::Ignore("`job.started` names no agent".into())),
        (_, runner) => Ok(Verdict::End { job_id: delivery.job.id, delivery_id: None, runner, jobs_within: false }),
    }
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
    // A difference, not `now - at`: a timestamp near the ends of the i64 range overflows that.
    if crate::clock::now().abs_diff(at) > MAX_SIGNATURE_AGE_SECONDS {
        return false;
    }
    hmac_sha256_matches(token, &[timestamp.as_bytes(), b".", body], signature)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn signed_at(timestamp: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("x-buildkite-event", HeaderValue::from_static("job.finished"));
        let value = format!("timestamp={timestamp},signature={}", "00".repeat(32));
        headers.insert("x-buildkite-signature", HeaderValue::from_str(&value).unwrap());
        headers
    }

    #[test]
    fn a_signature_timestamp_at_either_end_of_the_i64_range_is_refused_without_overflow() {
        let token = SecretString::from("buildkite-token");
        let body = br#"{"job": {"id": "0184990a-477b-4fa8-9968-496074483cee"}}"#;
        for timestamp in [i64::MIN.to_string(), i64::MAX.to_string()] {
            let result = read(&signed_at(&timestamp), body, &token);
            assert!(matches!(result, Err(WebhookError::InvalidSignature)), "{timestamp}: {result:?}");
        }
    }
}
