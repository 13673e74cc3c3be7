//! Buildkite: agent OIDC tokens, `job.started`/`job.finished` webhooks, the REST API's jobs and
//! agents, and `buildkite-agent oidc request-token` inside a job.

mod api;
mod claims;
mod credentials;
mod job_token;
mod webhook;

#[cfg(test)]
mod tests;

pub use api::Locator;

use super::{Ci, RuleLints, WebhookSecret};

pub const CI: Ci = Ci {
    title: "Buildkite",
    hosted_issuer: Some("https://agent.buildkite.com"),
    telling_claim: "pipeline_slug",
    fixed_audience: None,
    liveness_required: false,
    claim_roles: &[],
    map_claims: claims::job,
    webhook_secret: WebhookSecret::Token,
    webhook_summary: "Buildkite `job.finished` deliveries, by `X-Buildkite-Token` or `X-Buildkite-Signature`.",
    read_delivery: webhook::read,
    api: Some(&api::RestApi),
    find_job_token: job_token::find,
    job_token_hint: "$BUILDKITE_AGENT_ACCESS_TOKEN (Buildkite, via `buildkite-agent oidc request-token`)",
    step_output: None,
    job_in_run: None,
    lints: RuleLints::NONE,
};
