//! Azure DevOps service hooks: `ms.vss-pipelines.run-state-changed-event` ends the run, whose
//! credentials are bound to it. Hooks are not signed; the subscription sends HTTP Basic
//! credentials, compared in constant time.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use crate::ci::webhook::{Verdict, WebhookError, basic_credentials_match, parse};
use crate::job::bounded_fact;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delivery {
    /// The notification's id: the same for a redelivery.
    id: String,
    event_type: String,
    resource: Resource,
}

#[derive(Deserialize)]
struct Resource {
    run: Run,
}

#[derive(Deserialize)]
struct Run {
    id: u64,
    state: String,
}

const RUN_STATE_CHANGED: &str = "ms.vss-pipelines.run-state-changed-event";

/// `credentials` is `user:password`, as set on the subscription.
pub fn read(headers: &HeaderMap, body: &[u8], credentials: &SecretString) -> Result<Verdict, WebhookError> {
    if !basic_credentials_match(headers, credentials) {
        return Err(WebhookError::InvalidSignature);
    }
    let delivery: Delivery = parse(body)?;
    if delivery.event_type != RUN_STATE_CHANGED {
        return Ok(Verdict::Ignore(format!(
            "event `{}` does not end a run (credentials are bound to the run, not its jobs)",
            bounded_fact(delivery.event_type)
        )));
    }
    let run = delivery.resource.run;
    if run.state != "completed" {
        return Ok(Verdict::Ignore(format!("the run is {}, not completed", bounded_fact(run.state))));
    }
    Ok(Verdict::End { job_id: run.id.to_string(), delivery_id: Some(delivery.id), runner: None })
}
