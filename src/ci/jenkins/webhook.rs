//! The Notification plugin's deliveries: JSON for each phase of a build, authenticated only by
//! the HTTP Basic credentials in the endpoint URL the plugin is given. Nothing is signed, and
//! the job's own Jenkinsfile can change or drop the endpoint, so a delivery can end a build (the
//! safe direction) but tells nothing else the broker keeps.

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::claims::job_id;
use super::job_url::items;
use crate::ci::bounded_fact;
use crate::ci::webhook::{Verdict, WebhookError, basic_credentials_match, parse};

#[derive(Deserialize)]
struct Delivery {
    /// The job's URL below the root: `job/octo-org/job/octo-repo/job/main/`.
    url: String,
    build: Build,
}

#[derive(Deserialize)]
struct Build {
    number: u64,
    phase: String,
    /// The build's URL below the root, when sent: `…/job/main/42/`.
    #[serde(default)]
    url: Option<String>,
}

/// `credentials` is `user:password`, as in the endpoint URL's user-info.
pub fn read(headers: &HeaderMap, body: &[u8], credentials: &SecretString) -> Result<Verdict, WebhookError> {
    if !basic_credentials_match(headers, credentials) {
        return Err(WebhookError::InvalidSignature);
    }
    let delivery: Delivery = parse(body)?;
    let build = delivery.build;
    if build.phase != "COMPLETED" && build.phase != "FINALIZED" {
        return Ok(Verdict::Ignore(format!("phase `{}` is not an end", bounded_fact(build.phase))));
    }
    let full_name = items(&delivery.url)
        .ok_or_else(|| WebhookError::InvalidRequest("`url` is not a job's URL below the root".into()))?
        .join("/");
    if build.url.is_some_and(|url| url != format!("{}{}/", delivery.url, build.number)) {
        return Err(WebhookError::InvalidRequest("`build.url` is not build `build.number` of job `url`".into()));
    }
    Ok(Verdict::End { job_id: job_id(&full_name, build.number), delivery_id: None, runner: None, jobs_within: false })
}
