//! CI job-completion webhooks: authenticate the delivery (constant-time), read which job ended,
//! and end it. Everything else is acknowledged and ignored.

#[cfg(feature = "server")]
mod broker;
mod buildkite;
mod circleci;
mod github;
mod gitlab;
mod signature;

#[cfg(feature = "server")]
pub use broker::WebhookOutcome;

use http::HeaderMap;
use secrecy::SecretString;
use serde::Deserialize;

use super::Error;
use crate::ci_api::RunnerFacts;

/// Which CI system sent a webhook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookSource {
    Github,
    Gitlab,
    Buildkite,
    Circleci,
}

impl WebhookSource {
    pub fn name(self) -> &'static str {
        match self {
            Self::Github => "github",
            Self::Gitlab => "gitlab",
            Self::Buildkite => "buildkite",
            Self::Circleci => "circleci",
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhooksConfig {
    pub github: Option<SignedWebhookConfig>,
    pub gitlab: Option<TokenWebhookConfig>,
    pub buildkite: Option<TokenWebhookConfig>,
    pub circleci: Option<SignedWebhookConfig>,
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
    pub circleci: Option<Endpoint>,
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
            circleci: config
                .circleci
                .as_ref()
                .map(|c| endpoint("circleci", &c.issuer, "secret_env", &c.secret_env))
                .transpose()?,
        })
    }

    pub fn endpoint(&self, source: WebhookSource) -> Option<&Endpoint> {
        match source {
            WebhookSource::Github => self.github.as_ref(),
            WebhookSource::Gitlab => self.gitlab.as_ref(),
            WebhookSource::Buildkite => self.buildkite.as_ref(),
            WebhookSource::Circleci => self.circleci.as_ref(),
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
    /// The job has ended; the delivery may also name the runner it ran on.
    End {
        job_id: String,
        delivery_id: Option<String>,
        runner: Option<RunnerFacts>,
    },
    /// The job has started on this runner: a fact to record, not an end.
    Started {
        job_id: String,
        runner: RunnerFacts,
    },
    Ignore(String),
}

/// Authenticates a delivery from `source` with its configured `secret` and reads what it asks for.
pub fn read(source: WebhookSource, headers: &HeaderMap, body: &[u8], secret: &SecretString) -> Result<Verdict, Error> {
    match source {
        WebhookSource::Github => github::read(headers, body, secret),
        WebhookSource::Gitlab => gitlab::read(headers, body, secret),
        WebhookSource::Buildkite => buildkite::read(headers, body, secret),
        WebhookSource::Circleci => circleci::read(headers, body, secret),
    }
}

/// A header's value as text, if present and printable.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::InvalidRequest(format!("the webhook body does not parse: {e}")))
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod runner_tests;
