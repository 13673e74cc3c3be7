//! GitLab Job Hooks, authenticated by `X-Gitlab-Token`.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use crate::ci::CiKind;
use crate::ci::RunnerFacts;
use crate::ci::webhook::{Verdict, WebhookError, header, parse, token_matches, told_by_webhook};

/// Statuses after which a job runs no more.
pub(super) const FINAL_STATUSES: &[&str] = &["success", "failed", "canceled", "skipped"];

#[derive(Deserialize)]
struct Delivery {
    build_id: u64,
    build_status: String,
    // Null until a runner picks the job up.
    #[serde(default)]
    runner: Option<HookRunner>,
}

#[derive(Deserialize)]
struct HookRunner {
    id: u64,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    runner_type: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

impl HookRunner {
    fn facts(self) -> RunnerFacts {
        RunnerFacts {
            id: Some(self.id.to_string()),
            name: self.description,
            labels: self.tags,
            runner_type: self.runner_type,
            source: told_by_webhook(CiKind::Gitlab),
            ..RunnerFacts::default()
        }
        .bounded()
    }
}

pub fn read(headers: &HeaderMap, body: &[u8], token: &SecretString) -> Result<Verdict, WebhookError> {
    if !header(headers, "x-gitlab-token").is_some_and(|presented| token_matches(token, presented)) {
        return Err(WebhookError::InvalidSignature);
    }
    let event = header(headers, "x-gitlab-event").unwrap_or_default();
    if event != "Job Hook" {
        return Ok(Verdict::Ignore(format!("event `{event}` is not Job Hook")));
    }
    let delivery: Delivery = parse(body)?;
    let job_id = delivery.build_id.to_string();
    if delivery.build_status == "running"
        && let Some(runner) = delivery.runner
    {
        return Ok(Verdict::Started { job_id, runner: runner.facts() });
    }
    if !FINAL_STATUSES.contains(&delivery.build_status.as_str()) {
        return Ok(Verdict::Ignore(format!("status `{}` does not end the job", delivery.build_status)));
    }
    // GitLab repeats the idempotency key when it retries a delivery.
    let delivery_id = header(headers, "idempotency-key").or_else(|| header(headers, "x-gitlab-event-uuid"));
    Ok(Verdict::End {
        job_id,
        delivery_id: delivery_id.map(str::to_owned),
        runner: delivery.runner.map(HookRunner::facts),
        jobs_within: false,
    })
}
