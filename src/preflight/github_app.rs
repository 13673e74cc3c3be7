//! `[github]`: the App's key signs a JWT GitHub accepts (`GET /app`), and the App is installed,
//! not suspended, on every account a role mints for (`GET /app/installations`, App JWT: GitHub's
//! REST docs, "List installations for the authenticated app", which answers each installation's
//! `account.login` and `suspended_at`).

use std::collections::BTreeSet;
use std::time::Duration;

use super::{Finding, roles};
use crate::backends::GithubAppConfig;
use crate::ci::GithubApp;
use crate::policy::PolicySet;

pub async fn check(config: &GithubAppConfig, policy: Option<&PolicySet>) -> Vec<Finding> {
    let item = "github app";
    let key = match config.private_key() {
        Ok(key) => key,
        Err(message) => {
            let fix = format!("set {} to the App's PEM private key", config.private_key_env);
            return vec![Finding::failed(item, message, fix)];
        }
    };
    let timeout = Duration::from_secs(config.timeout_seconds);
    let app = match GithubApp::new(&config.api_url, &config.app_id, &key, timeout) {
        Ok(app) => app,
        Err(error) => return vec![Finding::failed(item, error.to_string(), "give the App's RSA private key in PEM")],
    };
    if let Err(error) = app.check().await {
        return vec![Finding::failed(
            item,
            format!("GET /app with the App's JWT: {error}"),
            format!("check `github.app_id` ({}) and that the key is one of the App's", config.app_id),
        )];
    }
    let installations = match app.installations().await {
        Ok(installations) => installations,
        Err(error) => return vec![Finding::failed(item, format!("GET /app/installations: {error}"), "check the App")],
    };
    let accounts: Vec<(&str, bool)> = installations
        .iter()
        .filter_map(|installation| {
            Some((installation.account.as_ref()?.login.as_str(), installation.suspended_at.is_some()))
        })
        .collect();
    let mut findings =
        vec![Finding::ok(item, format!("App {} signs; {} installation(s)", config.app_id, installations.len()))];
    let owners: BTreeSet<&str> =
        roles(policy).filter_map(|role| role.github_app.as_ref()).map(|scope| scope.owner.as_str()).collect();
    for owner in owners {
        let item = format!("github app on {owner}");
        let found = accounts.iter().find(|(login, _)| login.eq_ignore_ascii_case(owner));
        findings.push(match found {
            Some((_, false)) => Finding::ok(item, "installed"),
            Some((_, true)) => {
                Finding::failed(item, "the installation is suspended", format!("unsuspend the App on {owner}"))
            }
            None => Finding::failed(
                item,
                "a role mints for this account, but the App is not installed on it",
                format!("install the App on {owner} with the permissions the roles ask for"),
            ),
        });
    }
    findings
}
