//! Jenkins: tokens of the `oidc-provider` plugin, the Notification plugin's deliveries, the
//! REST API's builds and computers, and a `withCredentials` binding inside a build. A build is
//! the job: `<full name>#<number>`.

mod api;
mod claims;
mod credentials;
mod head;
mod job_token;
mod job_url;
mod templates;
mod webhook;

#[cfg(test)]
mod tests;

pub use api::Locator;

use super::Ci;

pub const CI: Ci = Ci {
    title: "Jenkins",
    hosted_issuer: None,
    // After Buildkite in `CiKind::ALL`, whose tokens carry a `build_number` too.
    telling_claim: "build_number",
    fixed_audience: None,
    liveness_required: false,
    claim_roles: claims::ROLES,
    map_claims: claims::job,
    webhook_secret_key: "credentials_env",
    webhook_summary: "Jenkins Notification plugin deliveries (`COMPLETED`, `FINALIZED`), by HTTP Basic credentials.",
    read_delivery: webhook::read,
    api: Some(&api::RestApi),
    find_job_token: job_token::find,
    job_token_hint: "$CI_CREDS_ID_TOKEN or $CI_CREDS_ID_TOKEN_FILE (Jenkins `withCredentials`)",
    step_output: None,
    job_in_run: None,
};
