//! Each `[webhooks.<name>]`: its secret set, and of the form the CI's delivery check can match.

use secrecy::ExposeSecret;

use super::Finding;
use crate::ci::WebhookSecret;
use crate::config::Config;
use crate::env_secret::secret_from_env;

/// Shorter than this, an HMAC key or shared token is guessable; the CIs' own docs suggest
/// random strings of 32 characters or more.
const SHORTEST_SECRET: usize = 16;

pub fn check(config: &Config) -> Vec<Finding> {
    config.webhooks.iter().map(|(name, table)| finding(config, name, table)).collect()
}

fn finding(config: &Config, name: &str, table: &crate::lifecycle::webhooks::WebhookConfig) -> Finding {
    let item = format!("webhook {name}");
    let Some(kind) = config.issuers.iter().find(|issuer| issuer.name == table.issuer).map(|issuer| issuer.kind) else {
        return Finding::failed(item, format!("no issuer is named `{}`", table.issuer), "fix `issuer`");
    };
    let env = match table.secret_env(name, kind) {
        Ok(env) => env,
        Err((key, message)) => return Finding::failed(item, format!("`{key}` {message}"), "fix the table"),
    };
    let secret = match secret_from_env(env) {
        Ok(secret) => secret,
        Err(message) => {
            return Finding::failed(
                item,
                message,
                format!("set {env} to the secret configured on the {} webhook", kind.ci().title),
            );
        }
    };
    let style = kind.ci().webhook_secret;
    if let Err(problem) = style.check_form(secret.expose_secret()) {
        return Finding::failed(item, format!("{env}: {problem}"), "set it to the secret exactly as the CI sends it");
    }
    let length = secret.expose_secret().chars().count();
    if style != WebhookSecret::Basic && length < SHORTEST_SECRET {
        return Finding::warn(
            item,
            format!("{env} is set but holds only {length} characters"),
            "use a random secret of 32 characters or more (`openssl rand -hex 32`), here and at the CI",
        );
    }
    Finding::ok(item, format!("{env} set ({})", style.key()))
}
