//! GitHub Actions: ID tokens from `token.actions.githubusercontent.com` (or a GitHub Enterprise
//! Server), `workflow_job` webhooks, the jobs API read through a GitHub App, and the runner's
//! token endpoint inside a job.

mod api;
#[cfg(feature = "server")]
mod app_tokens;
mod claims;
mod job_token;
mod runner;
mod webhook;

pub use api::Locator;
#[cfg(feature = "server")]
pub use app_tokens::{AppTokenError, AppTokens};

use http::HeaderMap;
use secrecy::SecretString;
use serde_json::Value;

use super::{Ci, ClaimsError, Env, JobApi, JobToken, StepOutput, Verdict, WebhookError};
use crate::job::Job;

pub struct GithubActions;

impl Ci for GithubActions {
    fn title(&self) -> &'static str {
        "GitHub"
    }

    fn job(&self, issuer: &str, claims: &Value) -> Result<Job, ClaimsError> {
        claims::job(issuer, claims)
    }

    fn hosted_issuer(&self) -> Option<&'static str> {
        Some("https://token.actions.githubusercontent.com")
    }

    fn telling_claim(&self) -> &'static str {
        "check_run_id"
    }

    fn webhook_secret_key(&self) -> &'static str {
        "secret_env"
    }

    fn webhook_summary(&self) -> &'static str {
        "GitHub `workflow_job` deliveries, signed with `X-Hub-Signature-256`."
    }

    fn read_webhook(&self, headers: &HeaderMap, body: &[u8], secret: &SecretString) -> Result<Verdict, WebhookError> {
        webhook::read(headers, body, secret)
    }

    fn api(&self) -> Option<&'static dyn JobApi> {
        Some(&api::JobsApi)
    }

    fn job_token(&self, env: Env<'_>) -> Option<JobToken> {
        job_token::find(env)
    }

    fn job_token_hint(&self) -> &'static str {
        "$ACTIONS_ID_TOKEN_REQUEST_URL with $ACTIONS_ID_TOKEN_REQUEST_TOKEN (GitHub Actions; the job needs `permissions: id-token: write`)"
    }

    fn step_output(&self) -> Option<StepOutput> {
        Some(StepOutput {
            name: "github",
            help: "`::add-mask::` for every secret on stdout, then `NAME=value` appended to `$GITHUB_ENV`",
            env_file: Some(("GITHUB_ENV", "set inside a GitHub Actions step")),
            mask: Some(|secret| format!("::add-mask::{secret}\n")),
            warning: None,
        })
    }
}
