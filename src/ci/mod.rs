//! Every CI system the broker speaks to, one folder each: how its tokens' claims map onto a
//! job, how its webhooks are authenticated and read, where and how its REST API answers for a
//! job, how a job finds its token for `ci-creds get`, and which runner facts name a host.
//!
//! A CI is a folder that fills one `Ci`, and one line in `every_ci!` below, which declares its
//! `CiKind` variant, its name and the dispatch `CiKind::ci` to its folder. Every token is
//! verified by `identity` before any code here sees its claims.

mod api;
mod azure_pipelines;
mod buildkite;
mod circleci;
mod claims;
mod github_actions;
mod gitlab;
mod jenkins;
mod job;
mod job_token;
mod kind;
mod lints;
mod named_job;
mod runner;
mod step_output;
mod webhook;
mod webhook_secret;

#[cfg(test)]
#[path = "locator_tag_tests.rs"]
mod locator_tag_tests;
#[cfg(test)]
mod test_support;

pub use api::{CredentialsReport, Head, JobApi, JobReport, Liveness, TokenHeader, header_number};
pub use claims::ClaimsError;
#[cfg(feature = "server")]
pub use github_actions::{
    AccessToken, AppError, AppTokenError, AppTokens, GithubApp, InstallationAccount, ListedInstallation,
};
pub use job::{DangerousTrigger, Job};
pub use job_token::{AskToken, Asking, Env, JobToken};
pub use lints::{ChangeRequest, PinningClaims, RefsNeedApi, RuleLints};
pub use named_job::{NamedJob, is_guid};
pub use runner::{FactSource, MAX_FACT_CHARS, MAX_LABELS, Runner, RunnerFacts, RunnerKey, Sourced, bounded_fact};
pub use step_output::StepOutput;
pub use webhook::{Verdict, WebhookError};
pub use webhook_secret::WebhookSecret;

use std::collections::BTreeMap;

use http::HeaderMap;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How a name in one CI spells a name in another, for the refusal of an allow rule that names no
/// issuer.
pub const NAMES_ACROSS_CIS: &str = "a Jenkins folder `octo-org` with a multibranch project `octo-repo` passes for the GitHub repository `octo-org/octo-repo`";

/// Everything the broker knows of one CI system: each CI's folder fills one of these.
pub struct Ci {
    /// How prose names it: "GitHub".
    pub title: &'static str,
    /// The documented `iss` of the CI's hosted service, if it has one.
    pub hosted_issuer: Option<&'static str>,
    /// A claim that tells this CI's tokens from those of the CIs before it in `CiKind::ALL`:
    /// how `ci-creds policy` guesses a claim set's CI.
    pub telling_claim: &'static str,
    /// The audience the CI writes into every token, where the broker cannot choose it: the
    /// default of an issuer of this CI without `audience`.
    pub fixed_audience: Option<&'static str>,
    /// Whether an exchange must hear from the CI's API that the job runs: a token whose audience
    /// is shared with every relying party proves nothing else about the job's state.
    pub liveness_required: bool,
    /// The claims the mapping reads whose names each issuer's admin chooses, with the names
    /// it reads when `[issuers.claim_names]` does not say.
    pub claim_roles: &'static [ClaimRole],
    /// The job a verified token's claims describe.
    map_claims: fn(&Issuer<'_>, &Value) -> Result<Job, ClaimsError>,
    /// How its webhook presents the secret: the key of `[webhooks.<name>]` that names it.
    pub webhook_secret: WebhookSecret,
    /// What `/v1/webhooks/<name>` takes, for the OpenAPI document.
    pub webhook_summary: &'static str,
    /// Authenticates a delivery with the configured secret, and reads what it asks for.
    read_delivery: fn(&HeaderMap, &[u8], &SecretString) -> Result<Verdict, WebhookError>,
    /// The CI's job API, if the broker can ask it.
    pub api: Option<&'static dyn JobApi>,
    /// Where a job of this CI finds its token, when its environment says it runs in this CI.
    find_job_token: fn(Env<'_>) -> Option<JobToken>,
    /// What `find_job_token` looks for, for the error when no CI's token is found.
    pub job_token_hint: &'static str,
    /// How a job hands credentials to its later steps, if the CI has a way of its own.
    pub step_output: Option<StepOutput>,
    /// How an exchange names the job within its run, for a CI whose token names only the run.
    pub job_in_run: Option<JobInRun>,
    /// What `ci-creds policy check` warns of in a rule for this CI.
    pub lints: RuleLints,
}

/// For a CI whose token names the run and not the job (Azure Pipelines): the job `ci-creds get`
/// names from its environment, and the job an exchange that names one is bound to.
pub struct JobInRun {
    /// The job the environment names, if it names one; an error says which variable is wrong.
    pub from_env: fn(Env<'_>) -> Option<Result<NamedJob, String>>,
    /// Binds the verified run's `job` to the named job: its id becomes the job's within the run,
    /// and its CI's API is asked about that job. The caller asserts the job; only the CI's API
    /// confirms it.
    pub bind: fn(&mut Job, NamedJob),
}

/// A claim a CI's mapping reads under a name the issuer's admin may choose (Jenkins' claim
/// templates): `[issuers.claim_names] <role> = "<claim>"`.
pub struct ClaimRole {
    pub role: &'static str,
    /// The claim read when the issuer does not name one.
    pub default: &'static str,
    /// What the claim must hold, for the docs and config errors.
    pub meaning: &'static str,
}

/// The configured issuer a token's claims are mapped for.
#[derive(Clone, Copy)]
pub struct Issuer<'a> {
    /// What policy rules call it.
    pub name: &'a str,
    /// `[issuers.claim_names]`: the claim each role is read from, where not the default.
    pub claim_names: &'a BTreeMap<String, String>,
    /// Jenkins' `controller_url`: the root URL of the controller whose jobs `sub` names, for an
    /// issuer whose URL does not tell it (the plugin's custom "Issuer URI").
    pub controller_url: Option<&'a str>,
}

impl<'a> Issuer<'a> {
    /// An issuer whose claims have their CI's default names.
    pub fn named(name: &'a str) -> Self {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        Self { name, claim_names: &NONE, controller_url: None }
    }

    /// The claim that holds `role`.
    pub fn claim(&self, role: &ClaimRole) -> &'a str {
        self.claim_names.get(role.role).map_or(role.default, String::as_str)
    }
}

impl Ci {
    /// The job a verified token's `claims` describe, for the configured `issuer`.
    pub fn job(&self, issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
        (self.map_claims)(issuer, claims)
    }

    /// Checks an issuer's `[issuers.claim_names]`: each key a role this CI has, each value a
    /// claim name. The error names the key.
    pub fn check_claim_names(&self, names: &BTreeMap<String, String>) -> Result<(), (String, String)> {
        for (role, claim) in names {
            if !self.claim_roles.iter().any(|known| known.role == role) {
                let roles: Vec<&str> = self.claim_roles.iter().map(|known| known.role).collect();
                let message = match roles.is_empty() {
                    true => format!("{} tokens have no claims whose names an issuer chooses", self.title),
                    false => format!("is not one of {}", roles.join(", ")),
                };
                return Err((role.clone(), message));
            }
            if claim.is_empty() {
                return Err((role.clone(), "must name a claim".to_owned()));
            }
        }
        Ok(())
    }

    /// Authenticates a delivery with the configured `secret`, and reads what it asks for.
    pub fn read_webhook(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        secret: &SecretString,
    ) -> Result<Verdict, WebhookError> {
        (self.read_delivery)(headers, body, secret)
    }

    /// Where a job of this CI finds its token, when `env` says the job runs in this CI.
    pub fn job_token(&self, env: Env<'_>) -> Option<JobToken> {
        (self.find_job_token)(env)
    }
}

// Every CI: its `CiKind` variant, its name, and its folder. The order is `CiKind::ALL`'s.
kind::every_ci! {
    Github => "github", github_actions;
    Gitlab => "gitlab", gitlab;
    Buildkite => "buildkite", buildkite;
    Circleci => "circleci", circleci;
    Jenkins => "jenkins", jenkins;
    AzurePipelines => "azure_pipelines", azure_pipelines;
}

/// Where the CI's API answers for a job, taken from its verified token at exchange and kept in
/// the store, so the reconciler can ask about a job long after its token is gone. Each CI with a
/// job API has one variant, its own coordinates; the JSON is tagged with the CI's name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ci", rename_all = "snake_case")]
pub enum JobLocator {
    Github(github_actions::Locator),
    Gitlab(gitlab::Locator),
    Buildkite(buildkite::Locator),
    Jenkins(jenkins::Locator),
    AzurePipelines(azure_pipelines::Locator),
}

impl JobLocator {
    /// The locator of a verified job, or why its token does not give one.
    pub fn of(job: &Job) -> Result<Self, &'static str> {
        let api = job.kind.and_then(|kind| kind.ci().api).ok_or("this CI has no job API the broker asks")?;
        api.locate(job)
    }

    pub fn kind(&self) -> CiKind {
        match self {
            Self::Github(_) => CiKind::Github,
            Self::Gitlab(_) => CiKind::Gitlab,
            Self::Buildkite(_) => CiKind::Buildkite,
            Self::Jenkins(_) => CiKind::Jenkins,
            Self::AzurePipelines(_) => CiKind::AzurePipelines,
        }
    }

    /// The job answer's path below the API's URL, every segment escaped; `None` when a
    /// coordinate cannot be a path segment (`..`).
    pub fn path(&self) -> Option<String> {
        match self {
            Self::Github(at) => at.path(),
            Self::Gitlab(at) => at.path(),
            Self::Buildkite(at) => at.path(),
            Self::Jenkins(at) => at.path(),
            Self::AzurePipelines(at) => at.path(),
        }
    }

    /// Whether the job located holds jobs within it, which end when it does: an Azure Pipelines
    /// run, not a job named within it.
    pub fn holds_jobs(&self) -> bool {
        matches!(self, Self::AzurePipelines(run) if run.job.is_none())
    }

    /// As kept in the store.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::ci::CiKind;
    use crate::ci::RunnerKey;

    fn claims(name: &str) -> Value {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).expect("fixture readable")).expect("JSON")
    }

    #[test]
    fn each_ci_says_which_runner_facts_name_a_host() {
        for (kind, fixture, key) in [
            (CiKind::Github, "github-token-claims.json", RunnerKey::IdAndName),
            (CiKind::Gitlab, "gitlab-token-claims.json", RunnerKey::Manager),
            (CiKind::Buildkite, "buildkite-token-claims.json", RunnerKey::Id),
            (CiKind::Circleci, "circleci-token-claims.json", RunnerKey::Unknown),
            (CiKind::Jenkins, "jenkins-token-claims.json", RunnerKey::Name),
            (CiKind::AzurePipelines, "azure-pipelines-token-claims.json", RunnerKey::GroupAndName),
        ] {
            let job = kind.ci().job(&super::Issuer::named(kind.name()), &claims(fixture)).unwrap();
            assert_eq!((job.kind, job.runner_key_by), (Some(kind), key), "{fixture}");
        }
    }
}
