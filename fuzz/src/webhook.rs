//! A webhook delivery through authentication and the body parser of its CI.
//!
//! The first byte holds flags; the rest is `Name: value` header lines, an empty line, then the
//! body, like an HTTP request without its request line. With flag bit 0 the target adds what
//! authenticates the delivery (a valid signature over the body, the shared token, or Jenkins'
//! Basic credentials), so that
//! most inputs reach the body parser; Buildkite's bit 1 picks its token header over a signature.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ci_creds::ci::Verdict;
use ci_creds::ci::CiKind;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;
use sha2::Sha256;

use crate::split_at_first;

pub const SECRET: &str = "fuzz-webhook-secret";

pub fn fuzz(source: CiKind, data: &[u8]) {
    let Some((headers, body)) = delivery(source, data) else { return };
    match source.ci().read_webhook(&headers, body, &SecretString::from(SECRET)) {
        Ok(Verdict::End { job_id, .. }) => assert!(!job_id.is_empty(), "a job end names its job"),
        Ok(Verdict::Started { job_id, runner }) => {
            assert!(!job_id.is_empty(), "a start names its job");
            assert!(runner.labels.len() <= 64 && runner.name.as_ref().is_none_or(|n| n.chars().count() <= 256));
        }
        Ok(Verdict::Ignore(_)) => {}
        Err(error) => {
            let _ = error.to_string();
        }
    }
}

/// The headers and the body `data` describes, authenticated when its flags ask for it.
fn delivery(source: CiKind, data: &[u8]) -> Option<(HeaderMap, &[u8])> {
    let (&flags, rest) = data.split_first()?;
    let (head, body) = split_at_first(rest, b"\n\n");
    let mut headers = HeaderMap::new();
    for line in head.split(|&byte| byte == b'\n') {
        let (name, value) = split_at_first(line, b":");
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value.trim_ascii())) {
            headers.append(name, value);
        }
    }
    if flags & 1 != 0 {
        authenticate(source, flags, &mut headers, body);
    }
    Some((headers, body))
}

fn authenticate(source: CiKind, flags: u8, headers: &mut HeaderMap, body: &[u8]) {
    let (name, value) = match source {
        CiKind::Github => ("x-hub-signature-256", format!("sha256={}", hmac_hex(&[body]))),
        CiKind::Gitlab => ("x-gitlab-token", SECRET.to_owned()),
        CiKind::Circleci => ("circleci-signature", format!("v1={}", hmac_hex(&[body]))),
        CiKind::Jenkins | CiKind::AzurePipelines => ("authorization", format!("Basic {}", STANDARD.encode(SECRET))),
        CiKind::Buildkite if flags & 2 != 0 => ("x-buildkite-token", SECRET.to_owned()),
        CiKind::Buildkite => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
            let timestamp = now.to_string();
            let signature = hmac_hex(&[timestamp.as_bytes(), b".", body]);
            ("x-buildkite-signature", format!("timestamp={timestamp},signature={signature}"))
        }
    };
    headers.insert(name, HeaderValue::from_str(&value).expect("hex and ASCII are valid header text"));
}

fn hmac_hex(parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).expect("HMAC takes any key");
    for part in parts {
        mac.update(part);
    }
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The authenticated seeds reach the body parser and end their job.
    #[test]
    fn each_cis_completion_seed_authenticates_and_ends_its_job() {
        for (source, target, seeds) in [
            (CiKind::Github, "webhook_github", &["completed"][..]),
            (CiKind::Gitlab, "webhook_gitlab", &["success"][..]),
            (CiKind::Buildkite, "webhook_buildkite", &["finished-signed", "finished-token"][..]),
            (CiKind::Circleci, "webhook_circleci", &["completed"][..]),
            (CiKind::Jenkins, "webhook_jenkins", &["completed", "finalized"][..]),
            (CiKind::AzurePipelines, "webhook_azure_pipelines", &["run-completed"][..]),
        ] {
            for seed in seeds {
                let data = std::fs::read(format!("{}/corpus/{target}/{seed}", env!("CARGO_MANIFEST_DIR"))).unwrap();
                let (headers, body) = delivery(source, &data).unwrap();
                let verdict = source.ci().read_webhook(&headers, body, &SecretString::from(SECRET));
                assert!(matches!(verdict, Ok(Verdict::End { .. })), "{target}/{seed}: {verdict:?}");
            }
        }
    }
}
