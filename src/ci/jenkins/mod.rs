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

use super::{Ci, RefsNeedApi, RuleLints, WebhookSecret};

pub const CI: Ci = Ci {
    title: "Jenkins",
    hosted_issuer: None,
    // After Buildkite in `CiKind::ALL`, whose tokens carry a `build_number` too.
    telling_claim: "build_number",
    fixed_audience: None,
    liveness_required: false,
    claim_roles: claims::ROLES,
    map_claims: claims::job,
    webhook_secret: WebhookSecret::Basic,
    webhook_summary: "Jenkins Notification plugin deliveries (`COMPLETED`, `FINALIZED`), by HTTP Basic credentials.",
    read_delivery: webhook::read,
    api: Some(&api::RestApi),
    find_job_token: job_token::find,
    job_token_hint: "$CI_CREDS_ID_TOKEN or $CI_CREDS_ID_TOKEN_FILE (Jenkins `withCredentials`)",
    step_output: None,
    job_in_run: None,
    lints: RuleLints {
        // A Jenkins job has no id: its full name on the pinned controller is all there is.
        pinned_by: Some("job_name"),
        // A `branch` claim names a tag build's tag and a change request's `PR-7` as branches, and
        // without one the ref is unknown (github-branch-source's `PullRequestSCMHead` is named
        // `PR-` and the number; tests/fixtures/README.md, `jenkins-api-build-change-request-fork`).
        refs_need_api: Some(RefsNeedApi {
            why: "without the build API a tag or a change request cannot be told from a branch, and a build with no `branch` claim has no ref",
            hint: "configure `[ci_api.<issuer>]` for the issuer, so that Jenkins itself tells each build's branch, tag or change request",
        }),
        ..RuleLints::NONE
    },
};
