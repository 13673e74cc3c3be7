//! How a CI presents its webhook's secret: which key of `[webhooks.<name>]` names it, and what
//! a secret must look like for any delivery's check (`ci/<ci>/webhook.rs`) to match it.

/// Each CI's `Ci::webhook_secret`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookSecret {
    /// A key each delivery is signed with (`secret_env`).
    Hmac,
    /// A token each delivery carries in a header (`token_env`); a CI may also sign with it.
    Token,
    /// HTTP Basic `user:password` (`credentials_env`).
    Basic,
}

impl WebhookSecret {
    /// Every style, in the order a `[webhooks.<name>]` table's keys are read.
    pub const ALL: [WebhookSecret; 3] = [Self::Hmac, Self::Token, Self::Basic];

    /// The key of `[webhooks.<name>]` naming the env var that holds the secret.
    pub fn key(self) -> &'static str {
        match self {
            Self::Hmac => "secret_env",
            Self::Token => "token_env",
            Self::Basic => "credentials_env",
        }
    }

    /// Whether the delivery check can ever match `secret`: an HMAC key is any bytes; a token
    /// compared with a header's value must be one (visible ASCII, `HeaderValue::to_str`); HTTP
    /// Basic credentials are `user:password`.
    pub fn check_form(self, secret: &str) -> Result<(), String> {
        match self {
            Self::Token if !secret.bytes().all(|b| b.is_ascii_graphic() || b == b' ') => {
                Err("holds characters an HTTP header cannot carry, so no delivery's token can match it".into())
            }
            Self::Basic => match secret.split_once(':') {
                Some((user, password)) if !user.is_empty() && !password.is_empty() => Ok(()),
                _ => Err("must be `user:password`, as in the URL or the service hook's basic authentication".into()),
            },
            Self::Hmac | Self::Token => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ci::CiKind;

    #[test]
    fn a_secret_is_refused_only_when_no_delivery_could_match_it() {
        let check_form = |kind: CiKind, secret: &str| kind.ci().webhook_secret.check_form(secret);
        assert!(check_form(CiKind::Github, "any bytes: é\u{1}").is_ok());
        assert!(check_form(CiKind::Gitlab, "glhook-0123456789abcdef").is_ok());
        assert!(check_form(CiKind::Gitlab, "naïve-token").is_err());
        assert!(check_form(CiKind::Jenkins, "ci-creds:s3cret").is_ok());
        for credentials in ["s3cret", ":s3cret", "ci-creds:"] {
            assert!(check_form(CiKind::AzurePipelines, credentials).is_err(), "{credentials}");
        }
    }
}
