//! CircleCI: OIDC tokens (`CIRCLE_OIDC_TOKEN_V2`) and `job-completed` webhooks. CircleCI has no
//! job API the broker asks: its webhook and the job's own revoke are how an end arrives.

mod claims;
mod webhook;

use http::HeaderMap;
use secrecy::SecretString;
use serde_json::Value;

use super::{Ci, ClaimsError, Env, JobApi, JobToken, StepOutput, Verdict, WebhookError};
use crate::job::Job;

const TOKEN_ENV: &str = "CIRCLE_OIDC_TOKEN_V2";

pub struct Circleci;

impl Ci for Circleci {
    fn title(&self) -> &'static str {
        "CircleCI"
    }

    fn job(&self, issuer: &str, claims: &Value) -> Result<Job, ClaimsError> {
        claims::job(issuer, claims)
    }

    fn hosted_issuer(&self) -> Option<&'static str> {
        Some("https://oidc.circleci.com/org")
    }

    fn telling_claim(&self) -> &'static str {
        "oidc.circleci.com/job-id"
    }

    fn webhook_secret_key(&self) -> &'static str {
        "secret_env"
    }

    fn webhook_summary(&self) -> &'static str {
        "CircleCI `job-completed` deliveries, signed with `circleci-signature: v1=…`."
    }

    fn read_webhook(&self, headers: &HeaderMap, body: &[u8], secret: &SecretString) -> Result<Verdict, WebhookError> {
        webhook::read(headers, body, secret)
    }

    fn api(&self) -> Option<&'static dyn JobApi> {
        None
    }

    /// The token CircleCI puts in every job's environment, with the project's audience.
    fn job_token(&self, env: Env<'_>) -> Option<JobToken> {
        env(TOKEN_ENV).map(|_| JobToken::Env(TOKEN_ENV))
    }

    fn job_token_hint(&self) -> &'static str {
        "$CIRCLE_OIDC_TOKEN_V2 (CircleCI)"
    }

    fn step_output(&self) -> Option<StepOutput> {
        None
    }
}
