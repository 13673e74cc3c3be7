//! The broker's GitHub App: the App JWT it signs, the installation of an account it looks up
//! (and caches), and the calls it makes as that installation. Both the jobs API reads
//! (`app_tokens.rs`) and the `github_app` credential (`backends/github_app`) call GitHub through
//! it. Answers are bounded and strictly typed; GitHub's refusals keep GitHub's own message, which
//! names what is wrong. The calls are those of GitHub's REST docs: "Generating a JSON Web Token
//! (JWT) for a GitHub App", "REST API endpoints for GitHub Apps" (`/app`, `/app/installations`,
//! `/orgs|users|repos/…/installation`, `…/access_tokens`) and "Revoke an installation access
//! token" (`DELETE /installation/token`); rate limits as "Rate limits for the REST API" says.

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::{ACCEPT, HeaderMap, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::clock;
use crate::net::{check_url_scheme, path_segment};

const API_VERSION: &str = "2022-11-28";
/// Larger than any answer of the endpoints used (an access token naming 500 repositories).
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;
/// GitHub refuses an App JWT whose `exp` is more than 10 minutes ahead; `iat` is set back for
/// clock drift, as GitHub recommends.
const JWT_BACKDATE_SECONDS: i64 = 60;
const JWT_LIFETIME_SECONDS: i64 = 9 * 60;
/// How long an account's installation id is reused before it is looked up again.
const INSTALLATION_CACHE: Duration = Duration::from_secs(3600);
/// The longest `Retry-After` the broker passes on.
const MAX_RETRY_AFTER_SECONDS: u64 = 3600;

/// What went wrong in a call to GitHub's App API; the backend and the jobs API reads each map it
/// onto their own errors.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// GitHub could not be reached, failed, or answered what does not parse.
    #[error("github is unavailable: {0}")]
    Unavailable(String),
    /// GitHub refused the call; `code` carries GitHub's status and message.
    #[error("github refused the request ({code}): {reason}")]
    Refused { code: String, reason: String },
    /// GitHub asked for a pause in calls.
    #[error("github is rate limiting the broker; retry in {retry_after_seconds} s")]
    Throttled { retry_after_seconds: u64 },
}

pub struct GithubApp {
    api_url: String,
    app_id: String,
    key: EncodingKey,
    http: reqwest::Client,
    installations: moka::future::Cache<String, u64>,
}

/// `POST /app/installations/{id}/access_tokens`, as much of it as the broker keeps.
#[derive(Deserialize)]
pub struct AccessToken {
    pub token: SecretString,
    pub expires_at: String,
    #[serde(default)]
    pub permissions: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub repositories: Vec<TokenRepository>,
}

#[derive(Deserialize)]
pub struct TokenRepository {
    pub name: String,
}

#[derive(Deserialize)]
struct Installation {
    id: u64,
}

/// One entry of `GET /app/installations`: its account, and `suspended_at` when suspended.
#[derive(Deserialize)]
pub struct ListedInstallation {
    pub id: u64,
    pub account: Option<InstallationAccount>,
    #[serde(default)]
    pub suspended_at: Option<String>,
}

#[derive(Deserialize)]
pub struct InstallationAccount {
    pub login: String,
}

#[derive(Deserialize)]
struct GithubMessage {
    message: String,
}

impl GithubApp {
    pub fn new(
        api_url: &str,
        app_id: &str,
        private_key_pem: &SecretString,
        timeout: Duration,
    ) -> Result<Self, AppError> {
        check_url_scheme(api_url).map_err(|reason| refused("config", reason))?;
        let key = EncodingKey::from_rsa_pem(private_key_pem.expose_secret().as_bytes())
            .map_err(|_| refused("config", "the App's private key is not an RSA key in PEM".into()))?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ci-creds/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| refused("config", e.to_string()))?;
        let installations =
            moka::future::Cache::builder().max_capacity(10_000).time_to_live(INSTALLATION_CACHE).build();
        Ok(Self {
            api_url: api_url.trim_end_matches('/').to_owned(),
            app_id: app_id.to_owned(),
            key,
            http,
            installations,
        })
    }

    /// An App JWT, good for nine minutes.
    fn app_jwt(&self) -> Result<SecretString, AppError> {
        #[derive(serde::Serialize)]
        struct AppClaims<'a> {
            iat: i64,
            exp: i64,
            iss: &'a str,
        }
        let now = clock::now();
        let claims =
            AppClaims { iat: now - JWT_BACKDATE_SECONDS, exp: now + JWT_LIFETIME_SECONDS, iss: self.app_id.as_str() };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map(SecretString::from)
            .map_err(|e| refused("app_jwt", e.to_string()))
    }

    /// `GET /app`: the App authenticates.
    pub async fn check(&self) -> Result<(), AppError> {
        let jwt = self.app_jwt()?;
        self.call::<serde_json::Value>(Method::GET, "/app", &jwt, None).await.map(|_| ())
    }

    /// `GET /app/installations` (App JWT): the App's installations, the first hundred.
    pub async fn installations(&self) -> Result<Vec<ListedInstallation>, AppError> {
        let jwt = self.app_jwt()?;
        self.call(Method::GET, "/app/installations?per_page=100", &jwt, None).await
    }

    /// The installation of the App on `owner`: an organisation's, else a user's.
    pub async fn installation(&self, owner: &str) -> Result<u64, AppError> {
        if let Some(id) = self.installations.get(owner).await {
            return Ok(id);
        }
        let jwt = self.app_jwt()?;
        let owner_path = path_segment(owner).ok_or_else(|| refused("owner", format!("`{owner}` is not an owner")))?;
        let id =
            match self.call::<Installation>(Method::GET, &format!("/orgs/{owner_path}/installation"), &jwt, None).await
            {
                Ok(installation) => installation.id,
                Err(AppError::Refused { code, .. }) if code.starts_with("HTTP 404") => {
                    self.call::<Installation>(Method::GET, &format!("/users/{owner_path}/installation"), &jwt, None)
                        .await?
                        .id
                }
                Err(error) => return Err(error),
            };
        self.installations.insert(owner.to_owned(), id).await;
        Ok(id)
    }

    /// The installation of the App that covers `repository` (`owner/name`):
    /// `GET /repos/{owner}/{repo}/installation`.
    pub async fn repository_installation(&self, repository: &str) -> Result<u64, AppError> {
        let key = format!("repository:{repository}");
        if let Some(id) = self.installations.get(&key).await {
            return Ok(id);
        }
        let segments =
            repository.split_once('/').and_then(|(owner, name)| Some((path_segment(owner)?, path_segment(name)?)));
        let Some((owner, name)) = segments else {
            return Err(refused("repository", format!("`{repository}` is not owner/name")));
        };
        let jwt = self.app_jwt()?;
        let path = format!("/repos/{owner}/{name}/installation");
        let id = self.call::<Installation>(Method::GET, &path, &jwt, None).await?.id;
        self.installations.insert(key, id).await;
        Ok(id)
    }

    /// An installation token of `installation` with exactly `scope` (the request body).
    pub async fn access_token(&self, installation: u64, scope: &serde_json::Value) -> Result<AccessToken, AppError> {
        let jwt = self.app_jwt()?;
        self.call(Method::POST, &format!("/app/installations/{installation}/access_tokens"), &jwt, Some(scope)).await
    }

    /// `DELETE /installation/token`: 204 revokes it; 401 means it is dead already.
    pub async fn revoke(&self, token: &SecretString) -> Result<(), AppError> {
        match self.call::<serde_json::Value>(Method::DELETE, "/installation/token", token, None).await {
            Ok(_) => Ok(()),
            Err(AppError::Refused { code, .. }) if code.starts_with("HTTP 401") => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        bearer: &SecretString,
        body: Option<&serde_json::Value>,
    ) -> Result<T, AppError> {
        // reqwest marks the header sensitive; the credential is never formatted here.
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.api_url))
            .bearer_auth(bearer.expose_secret())
            .header(ACCEPT, "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION);
        if let Some(body) = body {
            request = request.json(body);
        }
        let mut response = request.send().await.map_err(|e| unavailable(format!("{path}: {}", e.without_url())))?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut answer = Vec::new();
        while let Some(chunk) =
            response.chunk().await.map_err(|e| unavailable(format!("{path}: {}", e.without_url())))?
        {
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(unavailable(format!("{path}: the answer is larger than {MAX_ANSWER_BYTES} bytes")));
            }
            answer.extend_from_slice(&chunk);
        }
        if status.is_success() {
            let answer = if answer.is_empty() { b"null".as_slice() } else { &answer };
            return serde_json::from_slice(answer)
                .map_err(|e| unavailable(format!("{path}: the answer does not parse: {e}")));
        }
        if let Some(retry_after_seconds) = rate_limited(status, &headers) {
            return Err(AppError::Throttled { retry_after_seconds });
        }
        let message = serde_json::from_slice::<GithubMessage>(&answer).map(|m| m.message).unwrap_or_default();
        let message: String = message.chars().filter(|c| !c.is_control()).take(300).collect();
        match status.as_u16() {
            400..=499 => Err(AppError::Refused {
                code: format!("HTTP {}: {message}", status.as_u16()),
                reason: format!("{path} answered HTTP {}: {message}", status.as_u16()),
            }),
            _ => Err(unavailable(format!("{path} answered HTTP {}: {message}", status.as_u16()))),
        }
    }
}

/// GitHub's rate limits: 429, or 403 with `x-ratelimit-remaining: 0` or a `retry-after`. The
/// wait is `retry-after`, else until `x-ratelimit-reset` (unix seconds).
fn rate_limited(status: StatusCode, headers: &HeaderMap) -> Option<u64> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<u64>().ok();
    let retry_after = number(RETRY_AFTER.as_str());
    let exhausted = number("x-ratelimit-remaining") == Some(0);
    let limited = status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::FORBIDDEN && (exhausted || retry_after.is_some()));
    if !limited {
        return None;
    }
    let until_reset = number("x-ratelimit-reset").map(|reset| {
        let now = clock::now().max(0) as u64;
        reset.saturating_sub(now)
    });
    Some(retry_after.or(until_reset).unwrap_or(60).clamp(1, MAX_RETRY_AFTER_SECONDS))
}

fn unavailable(reason: String) -> AppError {
    AppError::Unavailable(reason)
}

fn refused(code: &str, reason: String) -> AppError {
    AppError::Refused { code: code.to_owned(), reason }
}
