//! Buildkite: agent OIDC tokens, `job.started`/`job.finished` webhooks, the REST API's jobs and
//! agents, and `buildkite-agent oidc request-token` inside a job.

mod api;
mod claims;
mod job_token;
mod webhook;

pub use api::Locator;

use http::HeaderMap;
use secrecy::SecretString;
use serde_json::Value;

use super::{Ci, ClaimsError, Env, JobApi, JobToken, StepOutput, Verdict, WebhookError};
use crate::job::Job;

pub struct Buildkite;

impl Ci for Buildkite {
    fn title(&self) -> &'static str {
        "Buildkite"
    }

    fn job(&self, issuer: &str, claims: &Value) -> Result<Job, ClaimsError> {
        claims::job(issuer, claims)
    }

    fn hosted_issuer(&self) -> Option<&'static str> {
        Some("https://agent.buildkite.com")
    }

    fn telling_claim(&self) -> &'static str {
        "pipeline_slug"
    }

    fn webhook_secret_key(&self) -> &'static str {
        "token_env"
    }

    fn webhook_summary(&self) -> &'static str {
        "Buildkite `job.finished` deliveries, by `X-Buildkite-Token` or `X-Buildkite-Signature`."
    }

    fn read_webhook(&self, headers: &HeaderMap, body: &[u8], secret: &SecretString) -> Result<Verdict, WebhookError> {
        webhook::read(headers, body, secret)
    }

    fn api(&self) -> Option<&'static dyn JobApi> {
        Some(&api::RestApi)
    }

    fn job_token(&self, env: Env<'_>) -> Option<JobToken> {
        job_token::find(env)
    }

    fn job_token_hint(&self) -> &'static str {
        "$BUILDKITE_AGENT_ACCESS_TOKEN (Buildkite, via `buildkite-agent oidc request-token`)"
    }

    fn step_output(&self) -> Option<StepOutput> {
        None
    }
}
