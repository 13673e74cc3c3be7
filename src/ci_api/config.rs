//! `[ci_api.<issuer>]`: the CI's own REST API for one issuer, asked whether a job still runs.
//! Every table is optional; an issuer without one is never asked.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ci::CiKind;
use crate::ci::TokenHeader;
use crate::net::check_url_scheme;

/// Every `[ci_api.<issuer>]` table, by issuer name.
pub type CiApisConfig = BTreeMap<String, CiApiConfig>;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CiApiConfig {
    /// GitHub `https://api.github.com` (GHES `https://HOST/api/v3`), GitLab
    /// `https://HOST/api/v4`, Buildkite `https://api.buildkite.com`.
    pub api_url: String,
    /// GitHub only: a GitHub App installed on the repositories with Actions: read.
    #[serde(default)]
    pub app_id: Option<String>,
    /// GitHub only: the env var holding the App's PEM private key.
    #[serde(default)]
    pub private_key_env: Option<String>,
    /// The env var holding a token: GitHub (instead of an App) with actions:read, GitLab
    /// `read_api`, Buildkite `read_builds`, Jenkins the API token of `user`.
    #[serde(default)]
    pub token_env: Option<String>,
    /// Jenkins only: the user whose API token `token_env` holds (HTTP Basic). It needs
    /// Overall/Read and Job/Read on every job whose builds get credentials.
    #[serde(default)]
    pub user: Option<String>,
    /// Ask the CI at each exchange, before any lease is written.
    #[serde(default = "yes")]
    pub check_running: bool,
    /// What an exchange does when the CI's answer is unknown: `allow` unless the CI's liveness
    /// is required (`Ci::liveness_required`), where it is `refuse` and cannot be otherwise.
    #[serde(default)]
    pub on_unavailable: Option<OnUnavailable>,
    #[serde(default = "default_timeout_seconds")]
    pub timeout_seconds: u64,
    /// Calls to this API per minute, at exchanges and by the reconciler together. Without it,
    /// the CI's default (`default_calls_per_minute`).
    #[serde(default)]
    pub max_calls_per_minute: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUnavailable {
    /// Carry on; the audit event and a metric record that the job's liveness was unknown.
    #[default]
    Allow,
    /// Refuse the exchange with 503 `ci_unavailable`.
    Refuse,
}

impl CiApiConfig {
    /// What an exchange of an issuer of `kind` does when the CI's answer is unknown.
    pub fn on_unavailable(&self, kind: CiKind) -> OnUnavailable {
        let default = if kind.ci().liveness_required { OnUnavailable::Refuse } else { OnUnavailable::Allow };
        self.on_unavailable.unwrap_or(default)
    }

    /// Checks `[ci_api.<name>]` for an issuer of `kind`; an error names the key.
    pub fn validate(&self, name: &str, kind: CiKind) -> Result<(), (String, String)> {
        let key = |field: &str| format!("ci_api.{name}.{field}");
        let invalid = |field: &str, message: &str| Err((key(field), message.to_owned()));
        let Some(api) = kind.ci().api else {
            let message = format!("{} has no job API the broker asks; use its webhook", kind.ci().title);
            return Err((format!("ci_api.{name}"), message));
        };
        check_url_scheme(&self.api_url).map_err(|e| (key("api_url"), e))?;
        let app = self.app_id.is_some() || self.private_key_env.is_some();
        let either = "give either token_env, or app_id with private_key_env";
        match (api.takes_app(), app, &self.token_env) {
            (true, true, None) => {
                let (Some(app_id), Some(_)) = (&self.app_id, &self.private_key_env) else {
                    return invalid("app_id", "app_id and private_key_env go together");
                };
                if app_id.is_empty() || !app_id.bytes().all(|b| b.is_ascii_digit()) {
                    return invalid("app_id", "must be the App's numeric id");
                }
            }
            (true, true, Some(_)) | (true, false, None) => return invalid("token_env", either),
            (_, false, Some(_)) => {}
            (false, true, _) => {
                return invalid("app_id", &format!("only a {} issuer's API takes an App", app_ci_title()));
            }
            (false, false, None) => return invalid("token_env", "is required: the env var holding a read token"),
        }
        let basic = api.token_header() == TokenHeader::Basic;
        match (&self.user, basic) {
            (None, true) => return invalid("user", "is required: the user whose API token token_env holds"),
            (Some(user), true) if user.is_empty() || user.contains(':') => {
                return invalid("user", "must be a user name, without `:`");
            }
            (Some(_), false) => {
                return invalid("user", &format!("{} takes a token alone, with no user", api.name()));
            }
            _ => {}
        }
        if kind.ci().liveness_required {
            let title = kind.ci().title;
            if !self.check_running {
                return invalid(
                    "check_running",
                    &format!(
                        "{title} tokens are exchanged only while the CI says the job runs: it cannot be turned off"
                    ),
                );
            }
            if self.on_unavailable == Some(OnUnavailable::Allow) {
                return invalid(
                    "on_unavailable",
                    &format!(
                        "{title} tokens are exchanged only while the CI says the job runs: an unknown answer refuses"
                    ),
                );
            }
        }
        if !(1..=60).contains(&self.timeout_seconds) {
            return invalid("timeout_seconds", "must be from 1 to 60");
        }
        if self.max_calls_per_minute == Some(0) {
            return invalid("max_calls_per_minute", "must be at least 1");
        }
        Ok(())
    }
}

/// The CIs whose API takes an App, as prose names them.
fn app_ci_title() -> String {
    let titles: Vec<&str> = CiKind::ALL
        .into_iter()
        .filter(|kind| kind.ci().api.is_some_and(|api| api.takes_app()))
        .map(|kind| kind.ci().title)
        .collect();
    titles.join(" or ")
}

fn yes() -> bool {
    true
}

/// A job status call answers in well under a second; one that takes longer than this is
/// treated as unknown rather than holding the exchange.
fn default_timeout_seconds() -> u64 {
    5
}
