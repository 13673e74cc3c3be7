//! GitLab Job Hooks, authenticated by `X-Gitlab-Token`.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::signature::token_matches;
use super::{Verdict, header, parse};
use crate::lifecycle::Error;

/// Statuses after which a job runs no more.
const FINAL_STATUSES: &[&str] = &["success", "failed", "canceled", "skipped"];

#[derive(Deserialize)]
struct Delivery {
    build_id: u64,
    build_status: String,
}

pub fn read(headers: &HeaderMap, body: &[u8], token: &SecretString) -> Result<Verdict, Error> {
    if !header(headers, "x-gitlab-token").is_some_and(|presented| token_matches(token, presented)) {
        return Err(Error::InvalidSignature);
    }
    let event = header(headers, "x-gitlab-event").unwrap_or_default();
    if event != "Job Hook" {
        return Ok(Verdict::Ignore(format!("event `{event}` is not Job Hook")));
    }
    let delivery: Delivery = parse(body)?;
    if !FINAL_STATUSES.contains(&delivery.build_status.as_str()) {
        return Ok(Verdict::Ignore(format!("status `{}` does not end the job", delivery.build_status)));
    }
    // GitLab repeats the idempotency key when it retries a delivery.
    let delivery_id = header(headers, "idempotency-key").or_else(|| header(headers, "x-gitlab-event-uuid"));
    Ok(Verdict::End { job_id: delivery.build_id.to_string(), delivery_id: delivery_id.map(str::to_owned) })
}
