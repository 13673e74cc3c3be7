//! Each `[ci_api.<issuer>]`: the CI takes the broker's read credentials (one cheap call the CI's
//! folder names, `JobApi::credentials_path`), and, where its answer tells, how long they last.

use super::{Finding, expiry_finding};
use crate::ci_api::{CiApi, CiApiConfig, Error};
use crate::config::Config;

pub fn item(issuer: &str) -> String {
    format!("ci_api {issuer}")
}

pub async fn check(config: &Config, name: &str, table: &CiApiConfig) -> Vec<Finding> {
    vec![finding(config, name, table).await]
}

async fn finding(config: &Config, name: &str, table: &CiApiConfig) -> Finding {
    let item = item(name);
    let secret_env = table.token_env.as_deref().or(table.private_key_env.as_deref()).unwrap_or("token_env");
    let rotate = format!("replace the credentials in {secret_env} before they expire");
    let Some(kind) = config.issuers.iter().find(|issuer| issuer.name == name).map(|issuer| issuer.kind) else {
        return Finding::failed(item, format!("no issuer is named `{name}`"), "fix the table's name");
    };
    let api = match CiApi::new(name, kind, table) {
        Ok(api) => api,
        Err(Error::Config { key, message }) => {
            return Finding::failed(item, format!("`{key}`: {message}"), format!("set {secret_env}"));
        }
        Err(error) => return Finding::failed(item, error.to_string(), "fix the table"),
    };
    let report = match api.check_credentials().await {
        Ok(report) => report,
        Err(error @ (Error::Status { status: 401 | 403, .. } | Error::Auth { .. })) => {
            return Finding::failed(
                item,
                format!("the credentials are refused: {error}"),
                format!("put valid read credentials in {secret_env}: these are wrong, expired or revoked"),
            );
        }
        Err(error @ Error::Malformed { .. }) => {
            return Finding::failed(
                item,
                error.to_string(),
                format!("give {secret_env} the access docs/config.md lists"),
            );
        }
        Err(error) => {
            return Finding::failed(
                item,
                error.to_string(),
                "check `api_url` and that the broker reaches the CI's API (redirects are not followed)",
            );
        }
    };
    let accepted = format!("{} {}", api.api_name(), report.summary);
    match (report.expires_at, report.untold) {
        (Some(expires_at), _) => expiry_finding(item, &accepted, expires_at, &rotate),
        (None, Some(untold)) => Finding::ok(item, format!("{accepted}; {untold}")),
        (None, None) => Finding::ok(item, format!("{accepted}; no expiry")),
    }
}
