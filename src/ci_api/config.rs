//! `[ci_api.<issuer>]`: the CI's own REST API for one issuer, asked whether a job still runs.
//! Every table is optional; an issuer without one is never asked.

use std::collections::BTreeMap;

use serde::Deserialize;

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
    /// `read_api`, Buildkite `read_builds`.
    #[serde(default)]
    pub token_env: Option<String>,
    /// Ask the CI at each exchange, before any lease is written.
    #[serde(default = "yes")]
    pub check_running: bool,
    /// What an exchange does when the CI's answer is unknown.
    #[serde(default)]
    pub on_unavailable: OnUnavailable,
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

fn yes() -> bool {
    true
}

/// A job status call answers in well under a second; one that takes longer than this is
/// treated as unknown rather than holding the exchange.
fn default_timeout_seconds() -> u64 {
    5
}
