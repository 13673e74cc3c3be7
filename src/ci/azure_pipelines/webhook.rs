//! Azure DevOps service hooks: `ms.vss-pipelines.job-state-changed-event` with the job completed
//! ends that attempt of the job (`{run}/{job}/{attempt}`); `ms.vss-pipelines.run-state-changed-event`
//! with the run completed ends the run and every job within it. Hooks are not signed; the
//! subscription sends HTTP Basic credentials, compared in constant time.
//!
//! Every authenticated delivery is acknowledged, even one the broker cannot use: Azure DevOps
//! retries only 408, 502, 503 and 504, and puts a subscription that sees any other failure on
//! probation, then disables it (azure-devops-docs `docs/service-hooks/troubleshoot.md`,
//! "Subscription failures and probation"); one odd delivery answered 400 would cost every later
//! job its end. What is not used is ignored with the reason, and reconciliation covers it.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::claims::job_within_run;
use crate::ci::webhook::{Verdict, WebhookError, basic_credentials_match};
use crate::ci::{NamedJob, bounded_fact};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delivery {
    /// The notification's id: the same for a redelivery.
    id: String,
    event_type: String,
    #[serde(default)]
    resource: Option<Resource>,
}

#[derive(Deserialize)]
struct Resource {
    #[serde(default)]
    run: Option<Run>,
    /// Only in job events.
    #[serde(default)]
    job: Option<HookJob>,
}

#[derive(Deserialize)]
struct Run {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    state: Option<String>,
    /// `{organisation}/{project}/_apis/pipelines/{pipeline}/runs/{run}`, in the captured payloads
    /// (tests/fixtures/README.md); absent from Microsoft's own samples.
    #[serde(default)]
    url: Option<String>,
}

#[derive(Deserialize)]
struct HookJob {
    id: String,
    /// In the captured payloads; Microsoft's sample (azure-devops-docs `docs/service-hooks/events.md`,
    /// "Run job state changed") has none.
    #[serde(default)]
    attempt: Option<u32>,
    state: String,
    #[serde(rename = "_links", default)]
    links: Option<Links>,
}

#[derive(Deserialize)]
struct Links {
    /// `…/_build/results?buildId={run}`, in Microsoft's sample and the captured payloads alike.
    #[serde(default)]
    web: Option<Link>,
}

#[derive(Deserialize)]
struct Link {
    href: String,
}

const RUN_STATE_CHANGED: &str = "ms.vss-pipelines.run-state-changed-event";
const JOB_STATE_CHANGED: &str = "ms.vss-pipelines.job-state-changed-event";

/// Why a delivery is acknowledged without effect.
const COVERED: &str = "acknowledged unused; reconciliation asks the build API";

/// `credentials` is `user:password`, as set on the subscription.
pub fn read(headers: &HeaderMap, body: &[u8], credentials: &SecretString) -> Result<Verdict, WebhookError> {
    if !basic_credentials_match(headers, credentials) {
        return Err(WebhookError::InvalidSignature);
    }
    let delivery: Delivery = match serde_json::from_slice(body) {
        Ok(delivery) => delivery,
        // serde's message may quote the delivery: bounded, like every fact from it.
        Err(e) => return Ok(Verdict::Ignore(bounded_fact(format!("the delivery does not parse ({COVERED}): {e}")))),
    };
    let resource = delivery.resource.unwrap_or(Resource { run: None, job: None });
    match delivery.event_type.as_str() {
        RUN_STATE_CHANGED => {
            let Some(run) = resource.run else { return Ok(unusable("`resource.run` is null")) };
            let state = run.state.as_deref().unwrap_or("of no state");
            if state != "completed" {
                return Ok(Verdict::Ignore(format!("the run is {}, not completed", bounded_fact(state))));
            }
            let Some(run_id) = run_id(Some(&run), None) else { return Ok(unusable("no run id")) };
            Ok(Verdict::End {
                job_id: run_id.to_string(),
                delivery_id: Some(delivery.id),
                runner: None,
                jobs_within: true,
            })
        }
        JOB_STATE_CHANGED => {
            let Some(job) = resource.job else { return Ok(unusable("`resource.job` is null")) };
            if job.state != "completed" {
                return Ok(Verdict::Ignore(format!("the job is {}, not completed", bounded_fact(job.state))));
            }
            let Some(run_id) = run_id(resource.run.as_ref(), job.links.as_ref()) else {
                return Ok(unusable("no run id in `resource.run.id` nor in the resource's URLs"));
            };
            // Attempt 1 stands in for a missing attempt while the job's id is checked.
            let named = match NamedJob::new(&job.id, job.attempt.unwrap_or(1)) {
                Ok(named) => named,
                Err(reason) => return Ok(unusable(&reason)),
            };
            let (job_id, jobs_within) = match job.attempt {
                Some(_) => (job_within_run(&run_id.to_string(), &named), false),
                // Without its attempt the job ends whole: each attempt of it the broker knows. A
                // rerun starts only once the stage has completed, after this attempt's event.
                None => (format!("{run_id}/{}", named.id), true),
            };
            Ok(Verdict::End { job_id, delivery_id: Some(delivery.id), runner: None, jobs_within })
        }
        other => Ok(Verdict::Ignore(format!("event `{}` ends neither a run nor a job", bounded_fact(other)))),
    }
}

fn unusable(why: &str) -> Verdict {
    Verdict::Ignore(format!("{} ({COVERED})", bounded_fact(why)))
}

/// The run's id: `resource.run.id`, else the last segment of `resource.run.url`
/// (`…/runs/{run}`), else the `buildId` of the job's web link.
fn run_id(run: Option<&Run>, links: Option<&Links>) -> Option<u64> {
    let from_url = |url: &str| {
        let path = url.split(['?', '#']).next()?;
        let (rest, id) = path.trim_end_matches('/').rsplit_once('/')?;
        rest.ends_with("/runs").then(|| id.parse().ok()).flatten()
    };
    let from_web = |href: &str| {
        let query = href.split_once('?')?.1.split('#').next()?;
        query.split('&').find_map(|pair| pair.strip_prefix("buildId=")).and_then(|id| id.parse().ok())
    };
    run.and_then(|run| run.id)
        .or_else(|| run.and_then(|run| run.url.as_deref()).and_then(from_url))
        .or_else(|| links.and_then(|links| links.web.as_ref()).and_then(|web| from_web(&web.href)))
}
