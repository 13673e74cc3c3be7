//! Azure Pipelines: the pipeline OIDC token (one issuer per organisation, one JWKS for all),
//! service hooks, and the build API of Azure DevOps. A run is the job its credentials are bound to,
//! or the job within it that the exchange names and the run's timeline shows running. Inside a
//! job, `ci-creds get` requests the token, names its job and hands credentials on by logging
//! commands.

mod api;
mod claims;
mod credentials;
mod job_token;
mod set_variable;
mod webhook;

#[cfg(test)]
mod tests;

pub use api::Locator;

use super::{Ci, JobInRun, PinningClaims, RuleLints, StepOutput, WebhookSecret};

pub const CI: Ci = Ci {
    title: "Azure Pipelines",
    hosted_issuer: Some("https://vstoken.dev.azure.com"),
    telling_claim: "rpo_id",
    claim_roles: &[],
    fixed_audience: Some("api://AzureADTokenExchange"),
    liveness_required: true,
    map_claims: claims::job,
    webhook_secret: WebhookSecret::Basic,
    webhook_summary: "Azure DevOps service hooks (`ms.vss-pipelines.run-state-changed-event`, `ms.vss-pipelines.job-state-changed-event`), by HTTP Basic credentials.",
    read_delivery: webhook::read,
    api: Some(&api::BuildsApi),
    find_job_token: job_token::find,
    job_token_hint: "$SYSTEM_OIDCREQUESTURI with $SYSTEM_ACCESSTOKEN (Azure Pipelines; map `SYSTEM_ACCESSTOKEN: $(System.AccessToken)` into the step's `env`)",
    step_output: Some(StepOutput {
        name: "azure",
        help: "`##vso[task.setvariable]` logging commands on stdout, secrets marked `issecret=true` (masked; map them into later steps' `env`)",
        env_file: None,
        mask: None,
        line: Some(set_variable::line),
        warning: None,
    }),
    job_in_run: Some(JobInRun { from_env: job_token::named_job, bind: claims::bind_job }),
    lints: RuleLints {
        // The issuer pins the organisation; `rpo_id` of a GitHub repository is a name, and Azure
        // Pipelines tokens carry no repository id. `prj_id` is the project's id and `def_id` the
        // pipeline's (Microsoft documents no claims: public captures, tests/fixtures/README.md).
        pinning_claims: Some(PinningClaims {
            claims: &["prj_id", "def_id"],
            message: "this Azure Pipelines rule pins neither the project nor the pipeline: any pipeline of the organisation that builds a repository of that name, or runs on that ref, matches it",
            hint: "add `claims: { prj_id: <project id>, def_id: <pipeline id> }` beside `repository` and `ref`",
        }),
        ..RuleLints::NONE
    },
};
