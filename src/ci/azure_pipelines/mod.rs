//! Azure Pipelines: the pipeline OIDC token (one issuer per organisation, one JWKS for all),
//! service hooks, and the build API of Azure DevOps. A run is the job its credentials are bound to.

mod api;
mod claims;
mod webhook;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

pub use api::Locator;

use super::Ci;
use crate::ci::job_token::{Env, JobToken};

pub const CI: Ci = Ci {
    title: "Azure Pipelines",
    hosted_issuer: Some("https://vstoken.dev.azure.com"),
    telling_claim: "rpo_id",
    claim_roles: &[],
    fixed_audience: Some("api://AzureADTokenExchange"),
    liveness_required: true,
    map_claims: claims::job,
    webhook_secret_key: "credentials_env",
    webhook_summary: "Azure DevOps service hooks (`ms.vss-pipelines.run-state-changed-event`), by HTTP Basic credentials.",
    read_delivery: webhook::read,
    api: Some(&api::BuildsApi),
    find_job_token: no_token_yet,
    job_token_hint: "$CI_CREDS_TOKEN (Azure Pipelines: request the pipeline's OIDC token with System.AccessToken)",
    step_output: None,
};

/// `ci-creds get` does not ask Azure DevOps for the token yet: the job passes it.
fn no_token_yet(_env: Env<'_>) -> Option<JobToken> {
    None
}
