//! `ci-creds check`: tries what a serving broker will need, one item at a time, and says of each
//! whether it works (`ok`), works for now (`warn`), or does not (`failed`), with the fix. Items
//! run concurrently, each within its own timeout; one failing stops no other. Nothing here
//! prints a secret: details name env vars, paths and counts, never their values.

mod aws;
mod ci_apis;
mod github_app;
mod issuers;
mod store;
mod vault;
mod webhooks;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;

use crate::config::{self, Config};
use crate::net::HttpClient;
use crate::policy::{BackendKind, PolicySet};

/// The longest any one item may take, its own calls' timeouts included; past it, it failed.
const ITEM_TIMEOUT: Duration = Duration::from_secs(20);
/// A credential that expires sooner than this is a warning: time to rotate it.
pub const EXPIRY_WARNING_DAYS: i64 = 14;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Failed => "failed",
        }
    }
}

/// One item's outcome: what was tried (`item`), what was found, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub item: String,
    pub status: Status,
    pub detail: String,
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(item: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { item: item.into(), status: Status::Ok, detail: detail.into(), fix: None }
    }

    pub fn warn(item: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { item: item.into(), status: Status::Warn, detail: detail.into(), fix: Some(fix.into()) }
    }

    pub fn failed(item: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { item: item.into(), status: Status::Failed, detail: detail.into(), fix: Some(fix.into()) }
    }
}

/// Every item's finding, in a stable order: policy, store, issuers, webhooks, CI APIs, Vault, AWS, the
/// GitHub App.
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    /// 1 when any item failed; 0 when all are ok or only warned.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.findings.iter().any(|finding| finding.status == Status::Failed))
    }

    /// One line per item: `ok      issuer github: 2 keys (RS256)`.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for finding in &self.findings {
            text.push_str(&format!("{:<8}{}: {}", finding.status.as_str(), finding.item, finding.detail));
            if let Some(fix) = &finding.fix {
                text.push_str(&format!(" — {fix}"));
            }
            text.push('\n');
        }
        text
    }

    /// A JSON array of `{item, status, detail, fix}`, `fix` null when there is none.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(&self.findings).unwrap_or_else(|_| "[]".into())
    }
}

type Check<'a> = Pin<Box<dyn Future<Output = Vec<Finding>> + Send + 'a>>;

/// Runs every item `config` calls for, concurrently.
pub async fn run(config: &Config) -> Report {
    let http = match HttpClient::new() {
        Ok(http) => http,
        Err(error) => {
            let finding = Finding::failed("http client", error.to_string(), "report this as a bug");
            return Report { findings: vec![finding] };
        }
    };
    let (policy, policy_finding) = match config::load_policies(&config.policy_dir) {
        Ok(policy) => {
            let finding = policy_finding(&policy, config);
            (Some(policy), finding)
        }
        Err(error) => (
            None,
            Finding::failed(
                "policy",
                error.to_string(),
                "fix the policy files (`ci-creds policy check` explains each error)",
            ),
        ),
    };
    let policy = policy.as_ref();
    let mut checks: Vec<(String, Check<'_>)> = vec![("store".into(), Box::pin(store::check(config)))];
    for issuer in &config.issuers {
        let http = http.clone();
        let item = issuers::item(issuer);
        checks.push((item, Box::pin(async move { vec![issuers::check(&http, issuer).await] })));
    }
    checks.push(("webhooks".into(), Box::pin(async { webhooks::check(config) })));
    for (name, table) in &config.ci_api {
        checks.push((ci_apis::item(name), Box::pin(ci_apis::check(config, name, table))));
    }
    if let Some(vault) = &config.vault {
        checks.push(("vault".into(), Box::pin(vault::check(vault, policy, http.clone()))));
    }
    if let Some(aws) = &config.aws {
        checks.push(("aws".into(), Box::pin(aws::check(aws))));
    }
    if let Some(github) = &config.github {
        checks.push(("github app".into(), Box::pin(github_app::check(github, policy))));
    }
    let runs = checks.into_iter().map(|(item, check)| async move {
        match tokio::time::timeout(ITEM_TIMEOUT, check).await {
            Ok(findings) => findings,
            Err(_) => vec![Finding::failed(
                item,
                format!("no answer within {} s", ITEM_TIMEOUT.as_secs()),
                "check that what it calls is reachable from the broker's network",
            )],
        }
    });
    let mut findings = vec![policy_finding];
    findings.extend(futures_util::future::join_all(runs).await.into_iter().flatten());
    Report { findings }
}

/// The policy loads, and every role's backend is configured (as `serve` requires).
fn policy_finding(policy: &PolicySet, config: &Config) -> Finding {
    let unconfigured = policy.roles().find_map(|role| {
        let (configured, backend) = match role.backend {
            BackendKind::Vault => (config.vault.is_some(), "vault"),
            BackendKind::Aws => (config.aws.is_some(), "aws"),
            BackendKind::GithubApp => (config.github.is_some(), "github"),
        };
        (!configured).then_some((role.name.as_str(), backend))
    });
    match unconfigured {
        Some((role, backend)) => Finding::failed(
            "policy",
            format!("role `{role}` uses backend `{backend}`, but the config has no [{backend}] section"),
            format!("add [{backend}] to the config, or remove the role"),
        ),
        None => Finding::ok("policy", format!("{} role(s)", policy.roles().count())),
    }
}

/// Whole days from now until `expires_at` (unix seconds), rounded down; negative once past.
pub fn days_left(expires_at: i64, now: i64) -> i64 {
    (expires_at - now).div_euclid(86_400)
}

/// The finding for a credential accepted now that expires at `expires_at`: a warning within
/// [`EXPIRY_WARNING_DAYS`], a failure once expired.
pub fn expiry_finding(item: String, accepted: &str, expires_at: i64, rotate: &str) -> Finding {
    let days = days_left(expires_at, crate::clock::now());
    let date =
        time::OffsetDateTime::from_unix_timestamp(expires_at).map(|at| at.date().to_string()).unwrap_or_default();
    if expires_at <= crate::clock::now() {
        Finding::failed(item, format!("{accepted}; expired on {date}"), rotate.to_owned())
    } else if days < EXPIRY_WARNING_DAYS {
        Finding::warn(item, format!("{accepted}; expires in {days} days ({date})"), rotate.to_owned())
    } else {
        Finding::ok(item, format!("{accepted}; expires in {days} days ({date})"))
    }
}

/// The roles of `policy`, or none when it did not load.
fn roles(policy: Option<&PolicySet>) -> impl Iterator<Item = &crate::policy::Role> {
    policy.into_iter().flat_map(PolicySet::roles)
}

#[cfg(test)]
mod tests;
