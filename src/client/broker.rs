//! Talking to the broker: one request per attempt, retried with backoff while the broker is
//! unreachable or failing, with a fresh CI token per attempt where the CI can give one, because
//! the broker may have spent the previous token before it failed.

use std::time::Duration;

use reqwest::StatusCode;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;

use super::Error;
use super::answer::Answer;
use super::error::Refusal;
use super::token::TokenSource;
use crate::ci::NamedJob;
use crate::net::check_url_scheme;

const RETRIES: u32 = 3;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `Retry-After` honoured: a broker (or a proxy in front of it) asking for more is
/// not worth a job waiting for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

#[derive(Clone, Copy)]
pub(super) struct Retry {
    first_delay: Duration,
}

impl Retry {
    pub(super) fn new(first_delay: Duration) -> Self {
        Self { first_delay }
    }
}

pub(super) struct BrokerClient {
    base: String,
    http: reqwest::Client,
}

/// What `POST /v1/jobs/self/revoke` answers.
#[derive(Deserialize)]
pub(super) struct Revoked {
    pub(super) job_id: String,
    pub(super) revoked: u64,
}

/// One attempt's outcome that is worth another attempt, and how long the broker asked us to wait.
struct Transient {
    why: String,
    retry_after: Option<Duration>,
}

impl Transient {
    fn new(why: String) -> Self {
        Self { why, retry_after: None }
    }
}

impl BrokerClient {
    pub(super) fn new(broker: &str) -> Result<Self, Error> {
        check_url_scheme(broker).map_err(|e| Error::Usage(format!("--broker {broker}: {e}")))?;
        // No redirects: the job's token must only ever reach the broker it was minted for.
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ci-creds/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Usage(format!("cannot build an HTTP client: {e}")))?;
        Ok(Self { base: broker.trim_end_matches('/').to_owned(), http })
    }

    pub(super) async fn exchange(
        &self,
        source: &TokenSource,
        audience: &str,
        roles: &[String],
        ttl: Option<Duration>,
        job: Option<&NamedJob>,
        retry: Retry,
    ) -> Result<Answer, Error> {
        let mut body = json!({ "roles": roles });
        if let Some(ttl) = ttl {
            body["ttl_seconds"] = json!(ttl.as_secs());
        }
        if let Some(job) = job {
            body["job"] = json!(job);
        }
        let url = format!("{}/v1/credentials", self.base);
        let raw = self
            .with_retries(source, audience, retry, |token| {
                self.http.post(&url).bearer_auth(token.expose_secret()).json(&body)
            })
            .await?;
        Answer::parse(raw)
    }

    pub(super) async fn self_revoke(
        &self,
        source: &TokenSource,
        audience: &str,
        job: Option<&NamedJob>,
        retry: Retry,
    ) -> Result<Revoked, Error> {
        let url = format!("{}/v1/jobs/self/revoke", self.base);
        let body = job.map(|job| json!({ "job": job }));
        let raw = self
            .with_retries(source, audience, retry, |token| {
                let request = self.http.post(&url).bearer_auth(token.expose_secret());
                match &body {
                    Some(body) => request.json(body),
                    None => request,
                }
            })
            .await?;
        serde_json::from_str(raw.expose_secret()).map_err(|_| {
            Error::Unavailable("the broker's answer to the revocation is not {\"job_id\", \"revoked\"}".into())
        })
    }

    /// Sends the request built by `request` until it succeeds, is refused, or the retries run out;
    /// returns the successful answer's body.
    async fn with_retries(
        &self,
        source: &TokenSource,
        audience: &str,
        retry: Retry,
        request: impl Fn(&SecretString) -> reqwest::RequestBuilder,
    ) -> Result<SecretString, Error> {
        let mut token = source.fetch(&self.http, audience).await?;
        let mut delay = retry.first_delay;
        let mut failures: Vec<String> = Vec::new();
        let mut asked_to_wait = None;
        for attempt in 1..=RETRIES + 1 {
            if attempt > 1 {
                let wait = asked_to_wait.take().map_or(delay, |asked: Duration| asked.min(MAX_RETRY_AFTER).max(delay));
                let fresh = if source.refreshable() { "with a fresh CI token" } else { "with the same CI token" };
                eprintln!(
                    "ci-creds: {}; retrying in {} {fresh} (attempt {attempt} of {})",
                    failures.last().map_or("", String::as_str),
                    humantime::format_duration(wait),
                    RETRIES + 1
                );
                tokio::time::sleep(wait).await;
                delay *= 2;
                if source.refreshable() {
                    token = source.fetch(&self.http, audience).await?;
                }
            }
            match self.attempt(request(&token)).await {
                Ok(body) => return Ok(body),
                Err(AttemptError::Final(Error::Refused(refusal)))
                    if refusal.error == "token_replayed" && !failures.is_empty() =>
                {
                    // The broker spent the token on an attempt that then failed, and this
                    // source cannot give another.
                    return Err(Error::Unavailable(format!(
                        "{}; the retry was refused as a replay because {} cannot give a fresh token",
                        failures.join("; "),
                        source.describe()
                    )));
                }
                Err(AttemptError::Final(error)) => return Err(error),
                Err(AttemptError::Transient(Transient { why, retry_after })) => {
                    failures.push(why);
                    asked_to_wait = retry_after;
                }
            }
        }
        Err(Error::Unavailable(format!(
            "the broker at {} is unavailable after {} attempts: {}",
            self.base,
            RETRIES + 1,
            failures.join("; ")
        )))
    }

    async fn attempt(&self, request: reqwest::RequestBuilder) -> Result<SecretString, AttemptError> {
        let response = request.send().await.map_err(|e| {
            let why = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "cannot connect"
            } else {
                "request failed"
            };
            AttemptError::Transient(Transient::new(format!("{why}: {}", e.without_url())))
        })?;
        let status = response.status();
        let retry_after = response.headers().get(reqwest::header::RETRY_AFTER).and_then(retry_after_seconds);
        let body = response.text().await.map_err(|e| {
            AttemptError::Transient(Transient::new(format!("reading the answer failed: {}", e.without_url())))
        })?;
        if status.is_success() {
            return Ok(body.into());
        }
        let mut refusal: Refusal = serde_json::from_str(&body).unwrap_or_default();
        refusal.status = status.as_u16();
        Err(match classify(status, refusal) {
            AttemptError::Transient(transient) => AttemptError::Transient(Transient { retry_after, ..transient }),
            final_error => final_error,
        })
    }
}

/// `Retry-After` in delay-seconds, the form the broker sends; an HTTP-date is not waited for.
fn retry_after_seconds(value: &reqwest::header::HeaderValue) -> Option<Duration> {
    value.to_str().ok()?.trim().parse().ok().map(Duration::from_secs)
}

enum AttemptError {
    Transient(Transient),
    Final(Error),
}

fn classify(status: StatusCode, refusal: Refusal) -> AttemptError {
    match status.as_u16() {
        401 | 403 | 409 => AttemptError::Final(Error::Refused(refusal)),
        429 | 500..=599 => {
            let code = if refusal.error.is_empty() { String::new() } else { format!(" {}", refusal.error) };
            AttemptError::Transient(Transient::new(format!("HTTP {}{code}", status.as_u16())))
        }
        _ => AttemptError::Final(Error::Usage(format!(
            "the broker answered HTTP {} {}: {}; hint: is --broker the broker's base URL, and are the roles and --ttl valid?",
            status.as_u16(),
            refusal.error,
            refusal.message
        ))),
    }
}
