//! GitHub App installation tokens: scoped to a role's repositories and permissions, minted with
//! the broker's App, revoked with `DELETE /installation/token`. GitHub fixes their lifetime at
//! one hour, so a shorter `max_ttl` is the broker's to enforce: it revokes them at the lease's
//! expiry as well as at the job's end.

mod seal;

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::config::GithubAppConfig;
use super::{Backend, Credential, Error, MintRequest, Minted, RevokeHandle};
use crate::ci::{AppError, GithubApp};
use crate::clock;
use crate::policy::{GithubAppScope, Repositories};
use seal::TokenSeal;

const NAME: &str = "github";

pub struct GithubAppBackend {
    app: GithubApp,
    seal: TokenSeal,
}

impl GithubAppBackend {
    pub fn new(config: &GithubAppConfig, private_key_pem: &SecretString) -> Result<Self, Error> {
        let app = GithubApp::new(
            &config.api_url,
            &config.app_id,
            private_key_pem,
            Duration::from_secs(config.timeout_seconds),
        )?;
        Ok(Self { app, seal: TokenSeal::new(private_key_pem) })
    }
}

/// The body of `POST /app/installations/{id}/access_tokens`: exactly the role's scope.
fn token_request(scope: &GithubAppScope) -> serde_json::Value {
    match &scope.repositories {
        Repositories::Names(names) => json!({ "repositories": names, "permissions": scope.permissions }),
        Repositories::Ids(ids) => json!({ "repository_ids": ids, "permissions": scope.permissions }),
    }
}

impl Backend for GithubAppBackend {
    type Scope = GithubAppScope;

    async fn mint(&self, request: MintRequest<'_, GithubAppScope>) -> Result<Minted, Error> {
        let installation = self.app.installation(&request.scope.owner).await?;
        let token = self.app.access_token(installation, &token_request(request.scope)).await?;
        // Where GitHub's own expiry cannot be read, an hour is what GitHub documents.
        let github_expiry = OffsetDateTime::parse(&token.expires_at, &Rfc3339)
            .unwrap_or_else(|_| OffsetDateTime::now_utc() + Duration::from_secs(3600));
        let handle = RevokeHandle::GithubApp {
            token_sha256: hex::encode(Sha256::digest(token.token.expose_secret().as_bytes())),
            sealed_token: self.seal.seal(&token.token),
            expires_at: github_expiry.unix_timestamp(),
        };
        let credential = Credential::GithubApp {
            token: token.token,
            permissions: token.permissions,
            repositories: token.repositories.into_iter().map(|repository| repository.name).collect(),
        };
        // The lease's expiry is the role's TTL, not GitHub's hour: the broker revokes it then.
        Ok(Minted { credential, handle, expires_at: None, confirmation: None })
    }

    async fn revoke(&self, handle: &RevokeHandle) -> Result<(), Error> {
        let RevokeHandle::GithubApp { sealed_token, expires_at, .. } = handle else {
            return Err(Error::WrongHandle(NAME));
        };
        // Past GitHub's own expiry the token is dead, whatever happened to the App's key.
        if *expires_at <= clock::now() {
            return Ok(());
        }
        let token = self.seal.open(sealed_token).map_err(|_| Error::Refused {
            backend: NAME,
            code: "unsealable".into(),
            reason: "the stored token was sealed with another App key; it dies at its expiry".into(),
        })?;
        Ok(self.app.revoke(&token).await?)
    }

    async fn check(&self) -> Result<(), Error> {
        Ok(self.app.check().await?)
    }
}

impl From<AppError> for Error {
    fn from(error: AppError) -> Self {
        match error {
            AppError::Unavailable(reason) => Error::Unavailable { backend: NAME, reason },
            AppError::Refused { code, reason } => Error::Refused { backend: NAME, code, reason },
            AppError::Throttled { retry_after_seconds } => Error::Throttled { backend: NAME, retry_after_seconds },
        }
    }
}
