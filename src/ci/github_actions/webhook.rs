//! GitHub `workflow_job` webhooks, signed with `X-Hub-Signature-256`.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::runner::GithubRunner;
use crate::ci::CiKind;
use crate::ci::webhook::{Verdict, WebhookError, header, hmac_sha256_matches, parse, told_by_webhook};

#[derive(Deserialize)]
struct Delivery {
    action: String,
    workflow_job: WorkflowJob,
}

#[derive(Deserialize)]
struct WorkflowJob {
    id: u64,
    #[serde(flatten)]
    runner: GithubRunner,
}

pub fn read(headers: &HeaderMap, body: &[u8], secret: &SecretString) -> Result<Verdict, WebhookError> {
    let signature = header(headers, "x-hub-signature-256").and_then(|s| s.strip_prefix("sha256="));
    if !signature.is_some_and(|signature| hmac_sha256_matches(secret, &[body], signature)) {
        return Err(WebhookError::InvalidSignature);
    }
    let event = header(headers, "x-github-event").unwrap_or_default();
    if event != "workflow_job" {
        return Ok(Verdict::Ignore(format!("event `{event}` is not workflow_job")));
    }
    let delivery: Delivery = parse(body)?;
    let job_id = delivery.workflow_job.id.to_string();
    match delivery.action.as_str() {
        "completed" => Ok(Verdict::End {
            job_id,
            delivery_id: header(headers, "x-github-delivery").map(str::to_owned),
            runner: delivery.workflow_job.runner.facts(&told_by_webhook(CiKind::Github)),
            jobs_within: false,
        }),
        "in_progress" => match delivery.workflow_job.runner.facts(&told_by_webhook(CiKind::Github)) {
            Some(runner) => Ok(Verdict::Started { job_id, runner }),
            None => Ok(Verdict::Ignore("action `in_progress` names no runner".into())),
        },
        action => Ok(Verdict::Ignore(format!("action `{action}` does not end the job"))),
    }
}
