//! `ci-creds check` of the GitLab API's read token: `GET /personal_access_tokens/self` answers
//! the token that authenticates the call, with `active`, `revoked`, `scopes` and `expires_at`
//! (a date, `2024-12-31`, or null) (GitLab's REST docs, "Personal access tokens API", "Get
//! single personal access token"; project and group access tokens answer the same). GitLab
//! tokens expire at that date's start, midnight UTC.

use http::HeaderMap;
use serde::Deserialize;
use time::Date;
use time::macros::format_description;

use crate::ci::CredentialsReport;
use crate::ci::bounded_fact;

pub(super) const PATH: &str = "/personal_access_tokens/self";

#[derive(Deserialize)]
struct Token {
    #[serde(default)]
    name: String,
    #[serde(default)]
    active: bool,
    #[serde(default)]
    revoked: bool,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    expires_at: Option<String>,
}

pub(super) fn read(_headers: &HeaderMap, body: &[u8]) -> Result<CredentialsReport, String> {
    let token: Token = serde_json::from_slice(body).map_err(|e| format!("the answer does not parse: {e}"))?;
    if token.revoked || !token.active {
        return Err("GitLab says the token is revoked or inactive".into());
    }
    if !token.scopes.iter().any(|scope| scope == "read_api" || scope == "api") {
        return Err("the token has neither the read_api nor the api scope; the jobs API needs read_api".into());
    }
    let expires_at = match &token.expires_at {
        None => None,
        Some(date) => {
            let date = Date::parse(date, format_description!("[year]-[month]-[day]"))
                .map_err(|_| "the token's `expires_at` is not a date")?;
            Some(date.midnight().assume_utc().unix_timestamp())
        }
    };
    let scopes: Vec<String> = token.scopes.into_iter().take(20).map(bounded_fact).collect();
    let summary = format!("token `{}` accepted, scopes {}", bounded_fact(token.name), scopes.join(", "));
    Ok(CredentialsReport { expires_at, summary, untold: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_expiry_date_and_refuses_a_token_without_read_api() {
        let body =
            br#"{"name":"ci-creds","active":true,"revoked":false,"scopes":["read_api"],"expires_at":"2024-12-31"}"#;
        assert_eq!(read(&HeaderMap::new(), body).unwrap().expires_at, Some(1_735_603_200));
        let never = br#"{"name":"ci-creds","active":true,"revoked":false,"scopes":["api"],"expires_at":null}"#;
        assert_eq!(read(&HeaderMap::new(), never).unwrap().expires_at, None);
        let narrow = br#"{"name":"ci-creds","active":true,"revoked":false,"scopes":["read_user"]}"#;
        assert!(read(&HeaderMap::new(), narrow).unwrap_err().contains("read_api"));
        let revoked = br#"{"name":"ci-creds","active":false,"revoked":true,"scopes":["read_api"]}"#;
        assert!(read(&HeaderMap::new(), revoked).is_err());
    }
}
