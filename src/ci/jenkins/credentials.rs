//! `ci-creds check` of the Jenkins user and API token: `GET /whoAmI/api/json` answers who the
//! call is authenticated as, `name`, `authenticated` and `anonymous` (jenkins core
//! `hudson/security/WhoAmI.java`, each `@Exported`). A wrong API token is answered 401; no
//! credentials at all are answered as `anonymous`. Jenkins API tokens do not expire.

use http::HeaderMap;
use serde::Deserialize;

use crate::ci::CredentialsReport;
use crate::ci::bounded_fact;

pub(super) const PATH: &str = "/whoAmI/api/json";

#[derive(Deserialize)]
struct WhoAmI {
    #[serde(default)]
    name: String,
    #[serde(default)]
    authenticated: bool,
    #[serde(default)]
    anonymous: bool,
}

pub(super) fn read(_headers: &HeaderMap, body: &[u8]) -> Result<CredentialsReport, String> {
    let who: WhoAmI = serde_json::from_slice(body).map_err(|e| format!("the answer does not parse: {e}"))?;
    if who.anonymous || !who.authenticated {
        return Err("Jenkins answered as the anonymous user: the user and API token were not taken".into());
    }
    Ok(CredentialsReport {
        expires_at: None,
        summary: format!("authenticated as {}", bounded_fact(who.name)),
        untold: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_authenticated_user_passes() {
        let user = br#"{"_class":"hudson.security.WhoAmI","anonymous":false,"authenticated":true,"name":"ci-creds"}"#;
        assert_eq!(read(&HeaderMap::new(), user).unwrap().summary, "authenticated as ci-creds");
        let anonymous = br#"{"anonymous":true,"authenticated":true,"name":"anonymous"}"#;
        assert!(read(&HeaderMap::new(), anonymous).unwrap_err().contains("anonymous"));
    }
}
