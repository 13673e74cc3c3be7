//! The controller's claim templates filled, or not. The plugin expands each template with
//! `Util.replaceMacro`, which leaves a variable the build does not set as its literal text
//! (`${CHANGE_ID}`); releases before 170.v15f73e25a_e28 sign that text, later ones refuse to mint
//! (oidc-provider: `IdTokenCredentials.token()`, commit b53c1f7 "Do not even generate a JWT with
//! unsubstituted claims": `formatted.contains("${")`). A token still holding one was minted for
//! a build its templates do not fit: its claims say nothing of that build.

use serde_json::Value;

use crate::ci::bounded_fact;
use crate::ci::claims::ClaimsError;

/// Nesting followed below a claim: templates make top-level strings, deeper values are only
/// looked through so that a literal `${` anywhere is found, not trusted.
const MAX_DEPTH: usize = 8;

/// Refuses claims any string of which (at any depth, up to `MAX_DEPTH`) still holds `${`,
/// naming the first such claim.
pub fn check(claims: &Value) -> Result<(), ClaimsError> {
    let Some(claims) = claims.as_object() else { return Ok(()) };
    match claims.iter().find(|(_, value)| holds_template(value, 0)) {
        Some((name, _)) => Err(ClaimsError::Unsubstituted(bounded_fact(name))),
        None => Ok(()),
    }
}

fn holds_template(value: &Value, depth: usize) -> bool {
    match value {
        Value::String(text) => text.contains("${"),
        // Deeper than any template writes: refused rather than walked without end.
        _ if depth >= MAX_DEPTH => matches!(value, Value::Array(_) | Value::Object(_)),
        Value::Array(items) => items.iter().any(|item| holds_template(item, depth + 1)),
        Value::Object(fields) => fields.values().any(|item| holds_template(item, depth + 1)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_claim_still_holding_a_variable_is_refused_by_name() {
        for (claims, claim) in [
            (json!({"sub": "https://j/job/a/", "change_id": "${CHANGE_ID}"}), "change_id"),
            (json!({"sub": "https://j/job/a/", "node": "agent-${NODE_NAME}-x"}), "node"),
            (json!({"sub": "https://j/job/a/", "groups": ["ok", "${GIT_COMMIT}"]}), "groups"),
            (json!({"sub": "https://j/job/a/", "nested": {"a": {"b": "${TAG_NAME}"}}}), "nested"),
        ] {
            assert_eq!(check(&claims), Err(ClaimsError::Unsubstituted(claim.to_owned())), "{claims}");
        }
    }

    #[test]
    fn filled_templates_and_a_lone_dollar_pass() {
        let claims = json!({
            "sub": "https://jenkins.example.com/job/a/",
            "build_number": 42,
            "price": "$5 and {braces}",
            "list": ["$", "{"],
            "flag": true,
            "none": null,
        });
        assert_eq!(check(&claims), Ok(()));
    }

    #[test]
    fn nesting_deeper_than_any_template_is_refused_not_walked() {
        let mut deep = json!("x");
        for _ in 0..(MAX_DEPTH + 2) {
            deep = json!([deep]);
        }
        assert_eq!(check(&json!({"deep": deep})), Err(ClaimsError::Unsubstituted("deep".to_owned())));
        assert_eq!(check(&json!({"shallow": [[["x"]]]})), Ok(()));
    }

    #[test]
    fn a_build_whose_template_was_not_filled_maps_to_no_job() {
        let claims = json!({
            "iss": "https://jenkins.example.com/oidc",
            "sub": "https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/",
            "build_number": 42,
            "branch": "main",
            "change_id": "${CHANGE_ID}",
        });
        let mapped = crate::ci::CiKind::Jenkins.ci().job(&crate::ci::Issuer::named("jenkins"), &claims);
        assert_eq!(mapped.err(), Some(ClaimsError::Unsubstituted("change_id".to_owned())));
    }

    #[test]
    fn the_error_names_the_claim_and_the_cause() {
        let message = ClaimsError::Unsubstituted("change_id".to_owned()).to_string();
        assert!(message.contains("`change_id`") && message.contains("does not set"), "{message}");
    }
}
