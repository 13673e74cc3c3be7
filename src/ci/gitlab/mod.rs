//! GitLab CI: `id_tokens`, Job Hooks, and the jobs API of GitLab.com or a self-managed GitLab.

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

pub struct Gitlab;

impl Ci for Gitlab {
    fn title(&self) -> &'static str {
        "GitLab"
    }

    fn job(&self, issuer: &str, claims: &Value) -> Result<Job, ClaimsError> {
        claims::job(issuer, claims)
    }

    fn hosted_issuer(&self) -> Option<&'static str> {
        Some("https://gitlab.com")
    }

    fn telling_claim(&self) -> &'static str {
        "job_project_path"
    }

    fn webhook_secret_key(&self) -> &'static str {
        "token_env"
    }

    fn webhook_summary(&self) -> &'static str {
        "GitLab Job Hook deliveries, authenticated by `X-Gitlab-Token`."
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
        "$CI_CREDS_ID_TOKEN (GitLab `id_tokens`; --token-env names another variable)"
    }

    fn step_output(&self) -> Option<StepOutput> {
        Some(StepOutput {
            name: "gitlab-dotenv",
            help: "A dotenv file for GitLab's `artifacts:reports:dotenv` (stored as an artifact)",
            env_file: None,
            mask: None,
            warning: Some(
                "a dotenv report is stored as a job artifact: whoever can read this pipeline's artifacts can read these credentials until they expire; keep --ttl short and revoke in after_script",
            ),
        })
    }
}
