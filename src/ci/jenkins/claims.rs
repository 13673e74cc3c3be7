//! Jenkins `oidc-provider` tokens. The plugin fixes only `iss`, `aud`, `iat` and `exp`; every
//! other claim comes from a template the controller's admin writes. Its defaults for a build are
//! `sub` = the job's URL and `build_number`, and the claims a mapping reads beyond those are
//! named per issuer (`ROLES`).

use serde_json::Value;

use super::job_url::{Controller, branch_of_item};
use super::templates;
use crate::ci::CiKind;
use crate::ci::claims::ClaimsError;
use crate::ci::{ClaimRole, Issuer};
use crate::ci::{DangerousTrigger, FactSource, Job, Runner, RunnerKey, Sourced, bounded_fact};

pub const BUILD_NUMBER: ClaimRole =
    ClaimRole { role: "build_number", default: "build_number", meaning: "the build's number (`${BUILD_NUMBER}`)" };
pub const BRANCH: ClaimRole =
    ClaimRole { role: "branch", default: "branch", meaning: "a multibranch job's branch (`${BRANCH_NAME}`)" };
pub const CHANGE_ID: ClaimRole =
    ClaimRole { role: "change_id", default: "change_id", meaning: "a change request's id (`${CHANGE_ID}`)" };
pub const CHANGE_FORK: ClaimRole = ClaimRole {
    role: "change_fork",
    default: "change_fork",
    meaning: "the fork a change request comes from (`${CHANGE_FORK}`)",
};
pub const NODE_NAME: ClaimRole =
    ClaimRole { role: "node_name", default: "node_name", meaning: "the agent the build runs on (`${NODE_NAME}`)" };

pub const ROLES: &[ClaimRole] = &[BUILD_NUMBER, BRANCH, CHANGE_ID, CHANGE_FORK, NODE_NAME];

/// What a policy rule names to let a change request's build (a pull request of a multibranch
/// project) have credentials: it runs code its author proposes, with the project's trust.
pub const CHANGE_REQUEST_EVENT: &str = "change_request";

pub fn job(issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
    templates::check(claims)?;
    let iss = string(claims, "iss")?.ok_or(ClaimsError::Missing("iss"))?;
    let sub = string(claims, "sub")?.ok_or(ClaimsError::Missing("sub"))?;
    // The plugin signs `iss` as the credential's custom "Issuer URI" where one is set, else its
    // issuer's URL (`<root>oidc`, a folder's `<root>oidc/job/<folder>`): oidc-provider
    // `IdTokenCredentials.token()`, `issuer != null ? issuer : findIssuer().url()`. A custom one
    // tells nothing of the controller, which `controller_url` then names.
    let controller = match issuer.controller_url {
        Some(root) => Controller::at_root(root),
        None => Controller::of_issuer(&iss).ok_or_else(|| {
            ClaimsError::Refused(
                "`iss` is not a Jenkins issuer (`<root URL>oidc`); for a custom Issuer URI set `controller_url`".into(),
            )
        })?,
    };
    let items = controller.job_items(&sub).ok_or_else(|| {
        ClaimsError::Refused("`sub` is not the URL of a job below the issuer's controller and folder".into())
    })?;
    let build_number = build_number(claims, issuer.claim(&BUILD_NUMBER))?;
    let branch = string(claims, issuer.claim(&BRANCH))?;
    let change_id = string(claims, issuer.claim(&CHANGE_ID))?;
    let change_fork = string(claims, issuer.claim(&CHANGE_FORK))?.map(bounded_fact);
    let node_name = string(claims, issuer.claim(&NODE_NAME))?;

    let full_name = items.join("/");
    let repository = match &branch {
        Some(branch) => {
            let (item, project) = items.split_last().filter(|(_, project)| !project.is_empty()).ok_or_else(|| {
                ClaimsError::Refused("a branch job sits in a multibranch project, but the job URL has none".into())
            })?;
            if branch_of_item(item).as_deref() != Some(branch.as_str()) {
                return Err(ClaimsError::Refused(format!(
                    "the `{}` claim disagrees with the job URL's branch",
                    issuer.claim(&BRANCH)
                )));
            }
            project.join("/")
        }
        None => full_name.clone(),
    };
    let change_request = change_id.is_some() || change_fork.is_some();
    // A change request's branch job is named after the request (`PR-7`), not a branch.
    let git_ref = branch.clone().filter(|_| !change_request).map(|branch| format!("refs/heads/{branch}"));
    // Without the claim only the build API tells what the build runs for (`head.rs`), which the
    // exchange asks when `[ci_api.<issuer>]` is configured and which then replaces this.
    let ref_unknown = (branch.is_none() && !change_request).then(|| {
        format!(
            "the token has no `{}` claim, and only the Jenkins API (`[ci_api.{}]`) tells a build's branch, tag or change request",
            issuer.claim(&BRANCH),
            issuer.name
        )
    });
    Ok(Job {
        kind: Some(CiKind::Jenkins),
        job_name: Some(full_name.clone()),
        run_id: Some(build_number.to_string()),
        ref_type: git_ref.as_ref().map(|_| "branch".to_owned()),
        git_ref,
        event: change_request.then(|| CHANGE_REQUEST_EVENT.to_owned()),
        dangerous_trigger: change_request.then(|| DangerousTrigger::Event(CHANGE_REQUEST_EVENT.to_owned())),
        fork: change_fork,
        ref_unknown,
        // Every Jenkins agent is a machine someone runs.
        runner_environment: Some("self-hosted".to_owned()),
        runner: Runner {
            name: node_name.map(|name| Sourced::new(bounded_fact(name), FactSource::Token)),
            ..Runner::default()
        },
        // An agent's name is unique on its controller; Jenkins gives agents no other id.
        runner_key_by: RunnerKey::Name,
        ..Job::new(issuer.name, job_id(&full_name, build_number), repository)
    })
}

/// How a build is named as a job: the job's full name and the build's number.
pub fn job_id(full_name: &str, build_number: u64) -> String {
    format!("{full_name}#{build_number}")
}

/// A template's claim: a string, or absent (an empty string is absent too: a template whose
/// variable the build does not set). Any other type is refused.
fn string(claims: &Value, name: &str) -> Result<Option<String>, ClaimsError> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone()).filter(|value| !value.is_empty())),
        Some(_) => Err(ClaimsError::WrongType(format!("`{name}` must be a string"))),
    }
}

/// The plugin's default template types `build_number` as an integer; an admin's own template
/// may give it as a string of digits.
fn build_number(claims: &Value, name: &str) -> Result<u64, ClaimsError> {
    let wrong = || ClaimsError::WrongType(format!("`{name}` must be a build number"));
    match claims.get(name) {
        None | Some(Value::Null) => {
            Err(ClaimsError::Refused(format!("no `{name}` claim: a token minted outside a build names no build")))
        }
        Some(Value::Number(number)) => number.as_u64().ok_or_else(wrong),
        Some(Value::String(digits)) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().map_err(|_| wrong())
        }
        Some(_) => Err(wrong()),
    }
}
