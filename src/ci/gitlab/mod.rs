//! GitLab CI: `id_tokens`, Job Hooks, and the jobs API of GitLab.com or a self-managed GitLab.

mod api;
mod claims;
mod credentials;
mod job_token;
mod webhook;

#[cfg(test)]
mod tests;

pub use api::Locator;

use super::{ChangeRequest, Ci, RuleLints, StepOutput, WebhookSecret};

pub const CI: Ci = Ci {
    title: "GitLab",
    hosted_issuer: Some("https://gitlab.com"),
    telling_claim: "job_project_path",
    fixed_audience: None,
    liveness_required: false,
    claim_roles: &[],
    map_claims: claims::job,
    webhook_secret: WebhookSecret::Token,
    webhook_summary: "GitLab Job Hook deliveries, authenticated by `X-Gitlab-Token`.",
    read_delivery: webhook::read,
    api: Some(&api::JobsApi),
    find_job_token: job_token::find,
    job_token_hint: "$CI_CREDS_ID_TOKEN (GitLab `id_tokens`; --token-env names another variable)",
    step_output: Some(StepOutput {
        name: "gitlab-dotenv",
        help: "A dotenv file for GitLab's `artifacts:reports:dotenv` (stored as an artifact)",
        env_file: None,
        mask: None,
        line: None,
        warning: Some(
            "a dotenv report is stored as a job artifact: whoever can read this pipeline's artifacts can read these credentials until they expire; keep --ttl short and revoke in after_script",
        ),
    }),
    job_in_run: None,
    lints: RuleLints {
        // `pipeline_source` is the pipeline's source, `merge_request_event` for a merge request's
        // pipeline (GitLab's `Gitlab::Ci::Jwt#ci_claims`; predefined variables, `CI_PIPELINE_SOURCE`).
        // The same claims set `ref_path` to `Ci::Pipeline#source_ref_path`, which for a merge
        // request is `refs/heads/` and its source branch: `refs/merge-requests/<iid>/head` is the
        // merge request's ref (`CI_MERGE_REQUEST_REF_PATH`), not a ref its tokens carry.
        change_request: Some(ChangeRequest { event: "merge_request_event", git_ref: "refs/merge-requests/1/head" }),
        ..RuleLints::NONE
    },
};
