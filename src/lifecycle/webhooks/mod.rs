//! CI job-completion webhooks: authenticate the delivery (constant-time), read which job ended,
//! and end it. Everything else is acknowledged and ignored.

mod buildkite;
mod github;
mod gitlab;
mod signature;

use axum::http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::{Broker, EndedBy, Error, JobEnd};

/// Which CI system sent a webhook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookSource {
    Github,
    Gitlab,
    Buildkite,
}

impl WebhookSource {
    pub fn name(self) -> &'static str {
        match self {
            Self::Github => "github",
            Self::Gitlab => "gitlab",
            Self::Buildkite => "buildkite",
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    pub github: Option<SignedWebhookConfig>,
    pub gitlab: Option<TokenWebhookConfig>,
    pub buildkite: Option<TokenWebhookConfig>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedWebhookConfig {
    /// The configured issuer (by name) whose jobs these webhooks end.
    pub issuer: String,
    /// The env var holding the webhook's HMAC secret.
    pub secret_env: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenWebhookConfig {
    pub issuer: String,
    /// The env var holding the webhook's token (Buildkite: also its HMAC key).
    pub token_env: String,
}

/// A configured webhook: whose jobs it ends, and the secret that authenticates it.
pub struct Endpoint {
    pub issuer: String,
    pub secret: SecretString,
}

#[derive(Default)]
pub struct Webhooks {
    pub github: Option<Endpoint>,
    pub gitlab: Option<Endpoint>,
    pub buildkite: Option<Endpoint>,
}

impl Webhooks {
    /// Reads each configured webhook's secret from its env var; an error names the config key.
    pub fn from_config(config: &WebhooksConfig) -> Result<Self, (String, String)> {
        let endpoint = |ci: &str, issuer: &str, key: &str, env: &str| {
            secret_from_env(env)
                .map(|secret| Endpoint { issuer: issuer.to_owned(), secret })
                .map_err(|message| (format!("webhooks.{ci}.{key}"), message))
        };
        Ok(Self {
            github: config
                .github
                .as_ref()
                .map(|c| endpoint("github", &c.issuer, "secret_env", &c.secret_env))
                .transpose()?,
            gitlab: config
                .gitlab
                .as_ref()
                .map(|c| endpoint("gitlab", &c.issuer, "token_env", &c.token_env))
                .transpose()?,
            buildkite: config
                .buildkite
                .as_ref()
                .map(|c| endpoint("buildkite", &c.issuer, "token_env", &c.token_env))
                .transpose()?,
        })
    }

    fn endpoint(&self, source: WebhookSource) -> Option<&Endpoint> {
        match source {
            WebhookSource::Github => self.github.as_ref(),
            WebhookSource::Gitlab => self.gitlab.as_ref(),
            WebhookSource::Buildkite => self.buildkite.as_ref(),
        }
    }
}

fn secret_from_env(env: &str) -> Result<SecretString, String> {
    match std::env::var(env) {
        Ok(secret) if !secret.is_empty() => Ok(SecretString::from(secret)),
        _ => Err(format!("the environment variable {env} is not set")),
    }
}

/// What a delivery asks for, once authenticated.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    End { job_id: String, delivery_id: Option<String> },
    Ignore(String),
}

/// What the broker did with a delivery.
#[derive(Debug, PartialEq, Eq)]
pub enum WebhookOutcome {
    Ended(JobEnd),
    Ignored(String),
    Duplicate,
}

impl Broker {
    pub async fn webhook(
        &self,
        source: WebhookSource,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<WebhookOutcome, Error> {
        let endpoint = self.webhooks.endpoint(source).ok_or(Error::WebhookNotConfigured(source.name()))?;
        let verdict = match source {
            WebhookSource::Github => github::read(headers, body, &endpoint.secret)?,
            WebhookSource::Gitlab => gitlab::read(headers, body, &endpoint.secret)?,
            WebhookSource::Buildkite => buildkite::read(headers, body, &endpoint.secret)?,
        };
        let (job_id, delivery_id) = match verdict {
            Verdict::End { job_id, delivery_id } => (job_id, delivery_id),
            Verdict::Ignore(reason) => return Ok(WebhookOutcome::Ignored(reason)),
        };
        let delivery = delivery_id.as_deref().map(|id| (source.name(), id));
        let ended = self.end_job(&endpoint.issuer, &job_id, EndedBy::Webhook(source.name()), delivery, None).await?;
        Ok(ended.map_or(WebhookOutcome::Duplicate, WebhookOutcome::Ended))
    }
}

/// A header's value as text, if present and printable.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("the webhook body does not parse: {e}")))
}
