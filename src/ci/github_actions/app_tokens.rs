//! The token the broker reads GitHub's jobs API with, when it is given a GitHub App: an
//! installation token asked for `actions: read` and nothing else, cached until shortly before
//! it expires.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::app::{AppError, GithubApp};
use crate::ci::JobLocator;

/// An installation token is taken again this long before GitHub's expiry (an hour after issue).
const RENEW_BEFORE_SECONDS: i64 = 300;

pub struct AppTokens {
    app: GithubApp,
    /// By installation id: the token and its expiry (unix seconds).
    tokens: moka::future::Cache<u64, Arc<(SecretString, i64)>>,
}

/// Why no token could be had.
pub enum AppTokenError {
    /// GitHub asked for a pause in calls.
    Paused {
        seconds: u64,
    },
    Refused(String),
}

impl AppTokens {
    pub fn new(api_url: &str, app_id: &str, private_key: &SecretString, timeout: Duration) -> Result<Self, String> {
        let app = GithubApp::new(api_url, app_id, private_key, timeout).map_err(|e| e.to_string())?;
        let tokens =
            moka::future::Cache::builder().max_capacity(10_000).time_to_live(Duration::from_secs(3600)).build();
        Ok(Self { app, tokens })
    }

    /// Whether GitHub takes the App's JWT (`GET /app`).
    pub async fn check(&self) -> Result<(), String> {
        self.app.check().await.map_err(|error| error.to_string())
    }

    /// A live token that can read the job at `locator`.
    pub async fn token_for(&self, locator: &JobLocator) -> Result<Arc<(SecretString, i64)>, AppTokenError> {
        let JobLocator::Github(locator) = locator else {
            return Err(AppTokenError::Refused("the job was recorded for another CI".into()));
        };
        let installation = self.app.repository_installation(&locator.repository).await.map_err(refused)?;
        let now = crate::clock::now();
        if let Some(token) = self.tokens.get(&installation).await
            && token.1 - RENEW_BEFORE_SECONDS > now
        {
            return Ok(token);
        }
        let scope = json!({ "permissions": { "actions": "read" } });
        let issued = self.app.access_token(installation, &scope).await.map_err(refused)?;
        let expires_at = OffsetDateTime::parse(&issued.expires_at, &Rfc3339)
            .map(OffsetDateTime::unix_timestamp)
            .unwrap_or(now + 3600);
        crate::metrics::github_app_token_expiry(installation, expires_at);
        let token = Arc::new((issued.token, expires_at));
        self.tokens.insert(installation, token.clone()).await;
        Ok(token)
    }
}

fn refused(error: AppError) -> AppTokenError {
    match error {
        AppError::Throttled { retry_after_seconds } => AppTokenError::Paused { seconds: retry_after_seconds },
        error => AppTokenError::Refused(error.to_string()),
    }
}
