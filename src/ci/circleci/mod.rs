//! CircleCI: OIDC tokens (`CIRCLE_OIDC_TOKEN_V2`) and `job-completed` webhooks. CircleCI has no
//! job API the broker asks: its webhook and the job's own revoke are how an end arrives.

mod claims;
mod webhook;

use super::{Ci, Env, JobToken, RuleLints, WebhookSecret};

const TOKEN_ENV: &str = "CIRCLE_OIDC_TOKEN_V2";

pub const CI: Ci = Ci {
    title: "CircleCI",
    hosted_issuer: Some("https://oidc.circleci.com/org"),
    telling_claim: "oidc.circleci.com/job-id",
    fixed_audience: None,
    liveness_required: false,
    claim_roles: &[],
    map_claims: claims::job,
    webhook_secret: WebhookSecret::Hmac,
    webhook_summary: "CircleCI `job-completed` deliveries, signed with `circleci-signature: v1=…`.",
    read_delivery: webhook::read,
    api: None,
    find_job_token: job_token,
    job_token_hint: "$CIRCLE_OIDC_TOKEN_V2 (CircleCI)",
    step_output: None,
    job_in_run: None,
    lints: RuleLints::NONE,
};

/// The token CircleCI puts in every job's environment, with the project's audience.
fn job_token(env: Env<'_>) -> Option<JobToken> {
    env(TOKEN_ENV).map(|_| JobToken::Env(TOKEN_ENV))
}

#[cfg(test)]
mod tests;
