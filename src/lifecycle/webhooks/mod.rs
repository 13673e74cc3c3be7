//! CI job webhooks: each configured CI's endpoint, whose jobs it ends and the secret that
//! authenticates it. How a CI's deliveries are authenticated and read is the CI's own (`ci/`).

#[cfg(feature = "server")]
mod broker;

#[cfg(feature = "server")]
pub use broker::WebhookOutcome;

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::Deserialize;

use crate::env_secret::secret_from_env;
use crate::job::CiKind;

/// `[webhooks.<ci>]` tables, by CI.
pub type WebhooksConfig = BTreeMap<CiKind, WebhookConfig>;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// The configured issuer (by name) whose jobs these webhooks end.
    pub issuer: String,
    /// The env var holding the webhook's HMAC secret, for a CI that signs its deliveries.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// The env var holding the webhook's token, for a CI that sends one (Buildkite: also its
    /// HMAC key).
    #[serde(default)]
    pub token_env: Option<String>,
    /// The env var holding `user:password`, for a CI that sends HTTP Basic credentials (Jenkins'
    /// Notification plugin, from the user-info of the URL it is given).
    #[serde(default)]
    pub credentials_env: Option<String>,
}

impl WebhookConfig {
    /// The env var the CI's own key names, or the key that is wrong: each CI takes exactly the
    /// one key `Ci::webhook_secret_key` says.
    pub fn secret_env(&self, kind: CiKind) -> Result<&str, (String, String)> {
        let wanted = kind.ci().webhook_secret_key;
        let key = |field: &str| format!("webhooks.{}.{field}", kind.name());
        let keys = [
            ("secret_env", &self.secret_env),
            ("token_env", &self.token_env),
            ("credentials_env", &self.credentials_env),
        ];
        let mut value = None;
        for (field, given) in keys {
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

/// A configured webhook: whose jobs it ends, and the secret that authenticates it.
pub struct Endpoint {
    pub issuer: String,
    pub secret: SecretString,
}

#[derive(Default)]
pub struct Webhooks {
    endpoints: BTreeMap<CiKind, Endpoint>,
}

impl Webhooks {
    /// Reads each configured webhook's secret from its env var; an error names the config key.
    pub fn from_config(config: &WebhooksConfig) -> Result<Self, (String, String)> {
        let mut endpoints = BTreeMap::new();
        for (&kind, table) in config {
            let env = table.secret_env(kind)?;
            let secret = secret_from_env(env)
                .map_err(|message| (format!("webhooks.{}.{}", kind.name(), kind.ci().webhook_secret_key), message))?;
            endpoints.insert(kind, Endpoint { issuer: table.issuer.clone(), secret });
        }
        Ok(Self { endpoints })
    }

    pub fn endpoint(&self, kind: CiKind) -> Option<&Endpoint> {
        self.endpoints.get(&kind)
    }
}
