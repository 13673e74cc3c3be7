//! GitHub Actions: ID tokens from `token.actions.githubusercontent.com` (or a GitHub Enterprise
//! Server), `workflow_job` webhooks, the jobs API read through a GitHub App, and the runner's
//! token endpoint inside a job.

mod api;
#[cfg(feature = "server")]
mod app;
#[cfg(feature = "server")]
mod app_tokens;
mod claims;
mod credentials;
mod job_token;
mod runner;
mod webhook;

#[cfg(test)]
mod tests;

pub use api::Locator;
#[cfg(feature = "server")]
pub use app::{AccessToken, AppError, GithubApp, InstallationAccount, ListedInstallation};
#[cfg(feature = "server")]
pub use app_tokens::{AppTokenError, AppTokens};

use super::{ChangeRequest, Ci, RuleLints, StepOutput, WebhookSecret};

pub const CI: Ci = Ci {
    title: "GitHub",
    hosted_issuer: Some("https://token.actions.githubusercontent.com"),
    telling_claim: "check_run_id",
    fixed_audience: None,
    liveness_required: false,
    claim_roles: &[],
    map_claims: claims::job,
    webhook_secret: WebhookSecret::Hmac,
    webhook_summary: "GitHub `workflow_job` deliveries, signed with `X-Hub-Signature-256`.",
    read_delivery: webhook::read,
    api: Some(&api::JobsApi),
    find_job_token: job_token::find,
    job_token_hint: "$ACTIONS_ID_TOKEN_REQUEST_URL with $ACTIONS_ID_TOKEN_REQUEST_TOKEN (GitHub Actions; the job needs `permissions: id-token: write`)",
    step_output: Some(StepOutput {
        name: "github",
        help: "`::add-mask::` for every secret on stdout, then `NAME=value` appended to `$GITHUB_ENV`",
        env_file: Some(("GITHUB_ENV", "set inside a GitHub Actions step")),
        mask: Some(|secret| format!("::add-mask::{secret}\n")),
        line: None,
        warning: None,
    }),
    job_in_run: None,
    lints: RuleLints {
        // `ref` of a `pull_request` run: "for pull requests events except `pull_request_target`, it
        // is `refs/pull/<pr_number>/merge`" (GitHub docs, contexts reference: `github.ref`,
        // github/docs `data/reusables/actions/ref-description.md`).
        change_request: Some(ChangeRequest { event: "pull_request", git_ref: "refs/pull/1/merge" }),
        ..RuleLints::NONE
    },
};
