//! Each `[webhooks.<name>]`: its secret set, and of the form the CI's delivery check can match.

use secrecy::ExposeSecret;

use super::Finding;
use crate::ci::CiKind;
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
    if let Err(problem) = check_form(kind, secret.expose_secret()) {
        return Finding::failed(item, format!("{env}: {problem}"), "set it to the secret exactly as the CI sends it");
    }
    let length = secret.expose_secret().chars().count();
    if kind.ci().webhook_secret_key != "credentials_env" && length < SHORTEST_SECRET {
        return Finding::warn(
            item,
            format!("{env} is set but holds only {length} characters"),
            "use a random secret of 32 characters or more (`openssl rand -hex 32`), here and at the CI",
        );
    }
    Finding::ok(item, format!("{env} set ({})", kind.ci().webhook_secret_key))
}

/// What the CI's delivery check (`ci/<ci>/webhook.rs`) can ever match, by how the CI presents
/// the secret: an HMAC key is any bytes; a token compared with a header's value must be one
/// (visible ASCII, `HeaderValue::to_str`); HTTP Basic credentials are `user:password`.
fn check_form(kind: CiKind, secret: &str) -> Result<(), String> {
    match kind.ci().webhook_secret_key {
        "token_env" if !secret.bytes().all(|b| b.is_ascii_graphic() || b == b' ') => {
            Err("holds characters an HTTP header cannot carry, so no delivery's token can match it".into())
        }
        "credentials_env" => match secret.split_once(':') {
            Some((user, password)) if !user.is_empty() && !password.is_empty() => Ok(()),
            _ => Err("must be `user:password`, as in the URL or the service hook's basic authentication".into()),
        },
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::check_form;
    use crate::ci::CiKind;

    #[test]
    fn a_secret_is_refused_only_when_no_delivery_could_match_it() {
        assert!(check_form(CiKind::Github, "any bytes: é\u{1}").is_ok());
        assert!(check_form(CiKind::Gitlab, "glhook-0123456789abcdef").is_ok());
        assert!(check_form(CiKind::Gitlab, "naïve-token").is_err());
        assert!(check_form(CiKind::Jenkins, "ci-creds:s3cret").is_ok());
        for credentials in ["s3cret", ":s3cret", "ci-creds:"] {
            assert!(check_form(CiKind::AzurePipelines, credentials).is_err(), "{credentials}");
        }
    }
}
