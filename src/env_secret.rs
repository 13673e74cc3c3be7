//! Secrets the config names by environment variable (webhook secrets, API tokens, the Vault
//! token, private keys, the store's password): one rule for every one of them.
//!
//! A value may end in one newline, as a secret mounted from a Kubernetes Secret file or written
//! by `echo` does, and that newline is not part of the secret. Any other whitespace around the
//! value is refused rather than trimmed: a secret that would verify one signature and not
//! another is worse than one that does not start.

use secrecy::SecretString;

/// The secret in the environment variable `name`; the error names the variable, never the value.
pub fn secret_from_env(name: &str) -> Result<SecretString, String> {
    secret_from(name, std::env::var(name).ok())
}

/// The rule, applied to the variable's `value` as read.
pub fn secret_from(name: &str, value: Option<String>) -> Result<SecretString, String> {
    let Some(mut value) = value.filter(|value| !value.is_empty()) else {
        return Err(format!("the environment variable {name} is not set"));
    };
    if value.ends_with("\r\n") {
        value.truncate(value.len() - 2);
    } else if value.ends_with('\n') {
        value.truncate(value.len() - 1);
    }
    if value.is_empty() {
        return Err(format!("the environment variable {name} is not set"));
    }
    if value.trim() != value {
        return Err(format!(
            "the environment variable {name} has whitespace around its value; only one trailing newline is ignored"
        ));
    }
    Ok(SecretString::from(value))
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::secret_from;

    #[test]
    fn one_trailing_newline_is_dropped_and_other_surrounding_whitespace_refused() {
        type Case = (Option<&'static str>, Result<&'static str, &'static str>);
        let cases: &[Case] = &[
            (Some("s3cret"), Ok("s3cret")),
            (Some("s3cret\n"), Ok("s3cret")),
            (Some("s3cret\r\n"), Ok("s3cret")),
            (Some("in ner"), Ok("in ner")),
            (
                Some("-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n"),
                Ok("-----BEGIN KEY-----\nAAAA\n-----END KEY-----"),
            ),
            (None, Err("is not set")),
            (Some(""), Err("is not set")),
            (Some("\n"), Err("is not set")),
            (Some("s3cret\n\n"), Err("whitespace around")),
            (Some(" s3cret"), Err("whitespace around")),
            (Some("s3cret "), Err("whitespace around")),
            (Some("s3cret\t\n"), Err("whitespace around")),
            (Some("   "), Err("whitespace around")),
        ];
        for (value, expected) in cases {
            let got = secret_from("WEBHOOK_SECRET", value.map(str::to_owned));
            match (got, expected) {
                (Ok(secret), Ok(want)) => assert_eq!(secret.expose_secret(), *want, "{value:?}"),
                (Err(message), Err(want)) => {
                    assert!(message.contains(want) && message.contains("WEBHOOK_SECRET"), "{value:?}: {message}");
                    assert!(value.is_none_or(|v| v.trim().is_empty() || !message.contains(v.trim())), "{message}");
                }
                (got, _) => panic!("{value:?}: {:?}", got.map(|s| s.expose_secret().to_owned())),
            }
        }
    }
}
