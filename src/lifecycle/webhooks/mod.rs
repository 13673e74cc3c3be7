//! CI job webhooks: each `[webhooks.<name>]` endpoint, whose jobs it ends and the secret that
//! authenticates it. How a CI's deliveries are authenticated and read is the CI's own (`ci/`).

#[cfg(feature = "server")]
mod broker;

#[cfg(feature = "server")]
pub use broker::WebhookOutcome;

use std::collections::BTreeMap;
use std::sync::Arc;

use secrecy::SecretString;
use serde::Deserialize;

use crate::ci::{CiKind, WebhookSecret};
use crate::env_secret::secret_from_env;

/// `[webhooks.<name>]` tables, by name: each serves `/v1/webhooks/<name>`.
pub type WebhooksConfig = BTreeMap<String, WebhookConfig>;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The configured issuer (by name) whose jobs this endpoint ends; its kind is the CI whose
    /// deliveries the endpoint reads.
    pub issuer: String,
    /// The env var holding the webhook's HMAC secret, for a CI that signs its deliveries
    /// (`WebhookSecret::Hmac`).
    #[serde(default)]
    pub secret_env: Option<String>,
    /// The env var holding the webhook's token, for a CI that sends one (`WebhookSecret::Token`;
    /// a CI may also sign with it).
    #[serde(default)]
    pub token_env: Option<String>,
    /// The env var holding `user:password`, for a CI that sends HTTP Basic credentials
    /// (`WebhookSecret::Basic`).
    #[serde(default)]
    pub credentials_env: Option<String>,
}

/// Whether `name` may name a webhook: it is the last segment of `/v1/webhooks/<name>`, a metric
/// label and a word of audit events, so nothing there needs escaping.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Checks every table against the configured issuers (`kind_of` gives an issuer's CI by its
/// name): its name, its issuer, and the one secret key its CI takes. An error names the key.
pub fn validate(config: &WebhooksConfig, kind_of: impl Fn(&str) -> Option<CiKind>) -> Result<(), (String, String)> {
    for (name, table) in config {
        table.kind(name, &kind_of)?;
    }
    Ok(())
}

impl WebhookConfig {
    /// The CI of the endpoint `name`: its issuer's.
    fn kind(&self, name: &str, kind_of: impl Fn(&str) -> Option<CiKind>) -> Result<CiKind, (String, String)> {
        if !is_valid_name(name) {
            return Err((
                format!("webhooks.{name:?}"),
                "a webhook's name is letters, digits, `-` and `_`: it is the path `/v1/webhooks/<name>`".to_owned(),
            ));
        }
        let key = format!("webhooks.{name}.issuer");
        let Some(kind) = kind_of(&self.issuer) else {
            return Err((key, format!("no issuer is named `{}`", self.issuer)));
        };
        // A table named after a CI has served that CI's endpoint since tables were keyed by CI:
        // it keeps meaning that CI.
        if let Some(named) = CiKind::from_name(name).filter(|named| *named != kind) {
            return Err((key, format!("`{}` is not a {} issuer", self.issuer, named.name())));
        }
        self.secret_env(name, kind)?;
        Ok(kind)
    }

    /// The env var the CI's own key names, or the key that is wrong: each CI takes exactly the
    /// one key its `Ci::webhook_secret` names.
    pub fn secret_env(&self, name: &str, kind: CiKind) -> Result<&str, (String, String)> {
        let wanted = kind.ci().webhook_secret.key();
        let key = |field: &str| format!("webhooks.{name}.{field}");
        let given = |style: WebhookSecret| match style {
            WebhookSecret::Hmac => &self.secret_env,
            WebhookSecret::Token => &self.token_env,
            WebhookSecret::Basic => &self.credentials_env,
        };
        let mut value = None;
        for (field, given) in WebhookSecret::ALL.map(|style| (style.key(), given(style))) {
            match given {
                Some(env) if field == wanted => value = Some(env.as_str()),
                Some(_) => {
                    return Err((key(field), format!("{} webhooks take `{wanted}`, not `{field}`", kind.ci().title)));
                }
                None => {}
            }
        }
        value.ok_or_else(|| (key(wanted), "is required: the env var holding the webhook's secret".to_owned()))
    }
}

/// A configured webhook: its name, its CI, whose jobs it ends, and the secret that
/// authenticates it.
pub struct Endpoint {
    pub name: Arc<str>,
    pub kind: CiKind,
    pub issuer: String,
    pub secret: SecretString,
}

#[derive(Default)]
pub struct Webhooks {
    endpoints: BTreeMap<String, Endpoint>,
}

impl Webhooks {
    /// Reads each configured webhook's secret from its env var; an error names the config key.
    pub fn from_config(
        config: &WebhooksConfig,
        kind_of: impl Fn(&str) -> Option<CiKind>,
    ) -> Result<Self, (String, String)> {
        let mut endpoints = BTreeMap::new();
        for (name, table) in config {
            let kind = table.kind(name, &kind_of)?;
            let env = table.secret_env(name, kind)?;
            let secret = secret_from_env(env)
                .map_err(|message| (format!("webhooks.{name}.{}", kind.ci().webhook_secret.key()), message))?;
            let endpoint = Endpoint { name: name.as_str().into(), kind, issuer: table.issuer.clone(), secret };
            endpoints.insert(name.clone(), endpoint);
        }
        Ok(Self { endpoints })
    }

    /// The endpoint served at `/v1/webhooks/<name>`, if one is configured.
    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.get(name)
    }
}
