//! The token the broker reads GitHub's jobs API with: a fixed token, or an installation token of
//! a GitHub App asked for `actions: read` and nothing else, cached until shortly before it expires.

use std::sync::Arc;

use secrecy::SecretString;
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::Error;
use crate::backends::github::app::GithubApp;

const API: &str = "the GitHub API";
/// An installation token is taken again this long before GitHub's expiry (an hour after issue).
const RENEW_BEFORE_SECONDS: i64 = 300;

pub(super) struct AppTokens {
    app: GithubApp,
    /// By installation id: the token and its expiry (unix seconds).
    tokens: moka::future::Cache<u64, Arc<(SecretString, i64)>>,
}

impl AppTokens {
    pub fn new(app: GithubApp) -> Self {
        let tokens = moka::future::Cache::builder()
            .max_capacity(10_000)
            .time_to_live(std::time::Duration::from_secs(3600))
            .build();
        Self { app, tokens }
    }

    /// A live token that can read the jobs of `repository`.
    pub async fn token_for(&self, repository: &str) -> Result<Arc<(SecretString, i64)>, Error> {
        let installation = self.app.repository_installation(repository).await.map_err(auth)?;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        if let Some(token) = self.tokens.get(&installation).await
            && token.1 - RENEW_BEFORE_SECONDS > now
        {
            return Ok(token);
        }
        let scope = json!({ "permissions": { "actions": "read" } });
        let issued = self.app.access_token(installation, &scope).await.map_err(auth)?;
        let expires_at = OffsetDateTime::parse(&issued.expires_at, &Rfc3339)
            .map(OffsetDateTime::unix_timestamp)
            .unwrap_or(now + 3600);
        let token = Arc::new((issued.token, expires_at));
        self.tokens.insert(installation, token.clone()).await;
        Ok(token)
    }
}

fn auth(error: crate::backends::Error) -> Error {
    match error {
        crate::backends::Error::Throttled { retry_after_seconds, .. } => {
            Error::Paused { api: API, seconds: retry_after_seconds }
        }
        error => Error::Auth { api: API, reason: error.to_string() },
    }
}
