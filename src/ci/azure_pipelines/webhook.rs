//! Azure DevOps service hooks: `ms.vss-pipelines.job-state-changed-event` with the job completed
//! ends that attempt of the job (`{run}/{job}/{attempt}`); `ms.vss-pipelines.run-state-changed-event`
//! with the run completed ends the run and every job within it. Hooks are not signed; the
//! subscription sends HTTP Basic credentials, compared in constant time.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::claims::job_within_run;
use crate::ci::webhook::{Verdict, WebhookError, basic_credentials_match, parse};
use crate::job::{NamedJob, bounded_fact};

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
    /// Only in job events.
    #[serde(default)]
    job: Option<HookJob>,
}

#[derive(Deserialize)]
struct Run {
    id: u64,
    state: String,
}

#[derive(Deserialize)]
struct HookJob {
    id: String,
    attempt: u32,
    state: String,
}

const RUN_STATE_CHANGED: &str = "ms.vss-pipelines.run-state-changed-event";
const JOB_STATE_CHANGED: &str = "ms.vss-pipelines.job-state-changed-event";

/// `credentials` is `user:password`, as set on the subscription.
pub fn read(headers: &HeaderMap, body: &[u8], credentials: &SecretString) -> Result<Verdict, WebhookError> {
    if !basic_credentials_match(headers, credentials) {
        return Err(WebhookError::InvalidSignature);
    }
    let delivery: Delivery = parse(body)?;
    let run = delivery.resource.run;
    match delivery.event_type.as_str() {
        RUN_STATE_CHANGED if run.state == "completed" => Ok(Verdict::End {
            job_id: run.id.to_string(),
            delivery_id: Some(delivery.id),
            runner: None,
            jobs_within: true,
        }),
        RUN_STATE_CHANGED => Ok(Verdict::Ignore(format!("the run is {}, not completed", bounded_fact(run.state)))),
        JOB_STATE_CHANGED => {
            let job = delivery.resource.job.ok_or_else(|| {
                WebhookError::InvalidRequest("a job-state-changed event without its `resource.job`".into())
            })?;
            if job.state != "completed" {
                return Ok(Verdict::Ignore(format!("the job is {}, not completed", bounded_fact(job.state))));
            }
            let named = NamedJob::new(&job.id, job.attempt).map_err(WebhookError::InvalidRequest)?;
            Ok(Verdict::End {
                job_id: job_within_run(&run.id.to_string(), &named),
                delivery_id: Some(delivery.id),
                runner: None,
                jobs_within: false,
            })
        }
        other => Ok(Verdict::Ignore(format!("event `{}` ends neither a run nor a job", bounded_fact(other)))),
    }
}
