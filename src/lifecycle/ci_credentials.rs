//! The CI APIs' read credentials, watched while the broker serves: each `[ci_api.<issuer>]` is
//! asked, a minute after start and then every `lifecycle.ci_credentials_interval` (an hour by
//! default), by the cheap call its CI's folder names (the one `ci-creds
//! check` makes), and where the answer tells the credentials' expiry (a GitHub token's
//! `github-authentication-token-expiration` header, a GitLab token's `expires_at`) it becomes a
//! metric, with a warning in the log for the last 14 days.
//!
//! The broker cannot renew such a token itself: it is a secret the deployment holds (`token_env`),
//! and rotating it at the CI (GitLab's `personal_access_tokens/self/rotate`) would revoke the copy
//! the deployment restarts with. An App's installation tokens are renewed by the broker and have
//! their own metric (`ci_creds_github_app_token_expiry_timestamp_seconds`).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::MissedTickBehavior;

use super::Broker;
use crate::ci_api::CiApi;
use crate::{clock, metrics};

/// The first check waits this long (or one interval, if shorter): a broker restarted in a loop
/// does not ask the CI at each start, and `ci-creds check` is the check at deployment.
const FIRST_CHECK_AFTER: Duration = Duration::from_secs(60);
const WARN_WITHIN: i64 = 14 * 24 * 3600;

pub async fn run(broker: Arc<Broker>) {
    if broker.ci_apis.is_empty() {
        return;
    }
    let every = broker.lifecycle.ci_credentials_interval;
    let first = tokio::time::Instant::now() + FIRST_CHECK_AFTER.min(every);
    let mut ticks = tokio::time::interval_at(first, every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        for api in broker.ci_apis.iter() {
            watch(api).await;
        }
    }
}

async fn watch(api: &CiApi) {
    let issuer = api.issuer.as_str();
    let report = match api.check_credentials().await {
        Ok(report) => report,
        Err(error) => {
            tracing::warn!(%issuer, %error, "the CI's API did not take the broker's read credentials");
            return;
        }
    };
    let Some(expires_at) = report.expires_at else { return };
    metrics::ci_api_credentials_expiry(issuer, expires_at);
    let left = expires_at - clock::now();
    if left <= 0 {
        tracing::error!(%issuer, expires_at, "the CI API's read credentials have expired; replace them");
    } else if left < WARN_WITHIN {
        let days_left = left / 86_400;
        tracing::warn!(%issuer, days_left, "the CI API's read credentials expire soon; replace them");
    }
}
