//! CircleCI `job-completed` outbound webhooks, signed with `circleci-signature: v1=<hex>`.
//!
//! The payload's `job.id` is the job's UUID, which CircleCI's OIDC token carries as
//! `oidc.circleci.com/job-id`: both are documented as the job's id (fixtures
//! `circleci-job-completed.json` and `circleci-token-claims.json`). Redeliveries carry the same
//! top-level `id`, which deduplicates them.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use crate::ci::webhook::{Verdict, WebhookError, header, hmac_sha256_matches, parse};

/// More `v1=` values than any rotation of secrets produces; beyond it the header is refused.
const MAX_SIGNATURES: usize = 8;

#[derive(Deserialize)]
struct Delivery {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    job: Option<Job>,
}

#[derive(Deserialize)]
struct Job {
    id: String,
}

pub fn read(headers: &HeaderMap, body: &[u8], secret: &SecretString) -> Result<Verdict, WebhookError> {
    if !header(headers, "circleci-signature").is_some_and(|value| signed(value, body, secret)) {
        return Err(WebhookError::InvalidSignature);
    }
    let delivery: Delivery = parse(body)?;
    if delivery.kind != "job-completed" {
        return Ok(Verdict::Ignore(format!("event `{}` is not job-completed", delivery.kind)));
    }
    let Some(job) = delivery.job.filter(|job| !job.id.is_empty()) else {
        return Err(WebhookError::InvalidRequest("a job-completed event without `job.id`".into()));
    };
    if delivery.id.is_empty() {
        return Err(WebhookError::InvalidRequest("the event's `id` is empty".into()));
    }
    Ok(Verdict::End { job_id: job.id, delivery_id: Some(delivery.id), runner: None, jobs_within: false })
}

/// Any `v1=` value of the comma-separated header matching the body's HMAC-SHA256; each compared
/// in constant time. Other versions are skipped: v1 is the only one CircleCI defines.
fn signed(value: &str, body: &[u8], secret: &SecretString) -> bool {
    let signatures: Vec<&str> = value.split(',').filter_map(|part| part.trim().strip_prefix("v1=")).collect();
    signatures.len() <= MAX_SIGNATURES
        && signatures.iter().fold(false, |found, signature| hmac_sha256_matches(secret, &[body], signature) | found)
}

#[cfg(test)]
mod tests {
    use hmac::{Hmac, Mac};
    use http::HeaderValue;
    use secrecy::ExposeSecret;
    use sha2::Sha256;

    use super::*;

    const SECRET: &str = "circleci-secret";
    const BODY: &[u8] = br#"{"id":"e-1","type":"job-completed","job":{"id":"8b91f9a8-7975-4e60-916c-f0152ccbc937"}}"#;

    fn hex_hmac(body: &[u8]) -> String {
        let secret = SecretString::from(SECRET.to_owned());
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes()).unwrap();
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    }

    fn with_signature(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("circleci-signature", HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn accepts_any_matching_v1_value_and_nothing_else() {
        let secret = SecretString::from(SECRET.to_owned());
        let good = hex_hmac(BODY);
        let bad = "00".repeat(32);
        let ended = Verdict::End {
            job_id: "8b91f9a8-7975-4e60-916c-f0152ccbc937".into(),
            delivery_id: Some("e-1".into()),
            runner: None,
            jobs_within: false,
        };
        for (case, value, accepted) in [
            ("one v1", format!("v1={good}"), true),
            ("rotated: old then new", format!("v1={bad},v1={good}"), true),
            ("another version", format!("v2={good}"), false),
            ("wrong", format!("v1={bad}"), false),
            ("not hex", "v1=zz".to_owned(), false),
            ("bare hex", good.clone(), false),
            ("too many", format!("{}v1={good}", format!("v1={bad},").repeat(MAX_SIGNATURES)), false),
        ] {
            let verdict = read(&with_signature(&value), BODY, &secret);
            if accepted {
                assert_eq!(verdict.ok().as_ref(), Some(&ended), "{case}");
            } else {
                assert!(matches!(verdict, Err(WebhookError::InvalidSignature)), "{case}");
            }
        }
        assert!(matches!(read(&HeaderMap::new(), BODY, &secret), Err(WebhookError::InvalidSignature)), "missing");
    }

    #[test]
    fn ignores_other_events_and_refuses_a_completion_without_a_job() {
        let secret = SecretString::from(SECRET.to_owned());
        let workflow = br#"{"id":"e-2","type":"workflow-completed","workflow":{"id":"w"}}"#;
        let verdict = read(&with_signature(&format!("v1={}", hex_hmac(workflow))), workflow, &secret);
        assert!(matches!(verdict, Ok(Verdict::Ignore(_))), "{verdict:?}");
        let jobless = br#"{"id":"e-3","type":"job-completed"}"#;
        let verdict = read(&with_signature(&format!("v1={}", hex_hmac(jobless))), jobless, &secret);
        assert!(matches!(verdict, Err(WebhookError::InvalidRequest(_))), "{verdict:?}");
    }
}
