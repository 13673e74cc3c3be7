//! `ci-creds get --format azure`: one `##vso[task.setvariable …]` logging command per variable,
//! which the agent turns into a variable of the job's later steps. The agent reads a command
//! from the first `##vso[` in a line up to the first `]`; what follows is the value, which it
//! then unescapes (`%3B`, `%0D`, `%0A`, `%5D`, and `%AZP25` unless the job turns that off). So a
//! value is written as it is, and one that the agent would end early or decode into something
//! else is refused rather than escaped: no escaping is right under both agent settings.

/// What the agent decodes in a command's value. Refused in any case, to be strict.
const DECODED: [&str; 5] = ["%3B", "%0D", "%0A", "%5D", "%AZP25"];

/// The command setting `name` to `value`; a secret is marked `issecret=true`, so the agent masks
/// it in every later log line (and a later step sees it only where it maps it into its `env`).
/// An error says why the value cannot be written, never what it holds.
pub fn line(name: &str, value: &str, secret: bool) -> Result<String, String> {
    // Names are the client's own (`VAULT_TOKEN_DEPLOY_PROD`); a property cannot hold `;` or `]`.
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err("is not a name a logging command can carry".into());
    }
    if value.chars().any(char::is_control) {
        return Err("holds a control character and cannot be written as a logging command".into());
    }
    let upper = value.to_ascii_uppercase();
    if DECODED.iter().any(|sequence| upper.contains(sequence)) {
        return Err(format!(
            "holds a sequence the agent would decode ({}) and cannot be written as a logging command",
            DECODED.join(", ")
        ));
    }
    let secret = if secret { ";issecret=true" } else { "" };
    Ok(format!("##vso[task.setvariable variable={name}{secret}]{value}\n"))
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn azure_sets_a_secret_masked_and_a_plain_value_as_is() {
        assert_eq!(
            line("VAULT_TOKEN", "hvs.CAES+/=", true).unwrap(),
            "##vso[task.setvariable variable=VAULT_TOKEN;issecret=true]hvs.CAES+/=\n"
        );
        assert_eq!(
            line("VAULT_ADDR", "https://vault.example:8200/v1", false).unwrap(),
            "##vso[task.setvariable variable=VAULT_ADDR]https://vault.example:8200/v1\n"
        );
    }

    #[test]
    fn azure_value_may_hold_what_only_a_property_cannot() {
        // The command ends at the first `]`, so both are the value's own after it.
        assert_eq!(
            line("X", "a;b]c##vso[d", true).unwrap(),
            "##vso[task.setvariable variable=X;issecret=true]a;b]c##vso[d\n"
        );
        assert_eq!(line("X", "100%", false).unwrap(), "##vso[task.setvariable variable=X]100%\n");
    }

    #[test]
    fn azure_refuses_what_would_end_or_change_the_value_without_saying_it() {
        for value in [
            "s.tok\n##vso[task.prependpath]/tmp",
            "a\rb",
            "a\u{0}b",
            "a\tb",
            "a%0Ab",
            "a%0ab",
            "x%3By",
            "x%5D",
            "x%AZP25y",
        ] {
            let why = line("VAULT_TOKEN", value, true).unwrap_err();
            assert!(!why.contains(value), "{why}");
        }
    }

    #[test]
    fn azure_refuses_a_name_that_is_not_one() {
        for name in ["", "A;issecret=false", "A]x", "A B"] {
            assert!(line(name, "v", true).is_err(), "{name}");
        }
    }
}
