//! `ci-creds check` of the Azure DevOps personal access token: `GET /_apis/connectionData`
//! (below the organisation's URL) answers `authenticatedUser` for the credentials of the call.
//! Microsoft does not document it in the REST reference; its shape is that of
//! `ConnectionData` in the azure-devops-extension-api typings. It does not tell the PAT's
//! expiry, and no call a PAT may make about itself does: that is looked up by hand.

use http::HeaderMap;
use serde::Deserialize;

use crate::ci::CredentialsReport;
use crate::ci::bounded_fact;

pub(super) const PATH: &str = "/_apis/connectionData";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConnectionData {
    authenticated_user: Identity,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    #[serde(default)]
    id: String,
    #[serde(default)]
    provider_display_name: Option<String>,
}

pub(super) fn read(_headers: &HeaderMap, body: &[u8]) -> Result<CredentialsReport, String> {
    let data: ConnectionData =
        serde_json::from_slice(body).map_err(|_| "the answer is not connection data (a sign-in page?)".to_owned())?;
    let user = data.authenticated_user;
    if user.id.is_empty() {
        return Err("Azure DevOps names no authenticated user".into());
    }
    let name = user.provider_display_name.map_or(user.id, bounded_fact);
    Ok(CredentialsReport {
        expires_at: None,
        summary: format!("authenticated as {name}"),
        untold: Some(
            "Azure DevOps does not tell a PAT's expiry through its API: check it under User settings → Personal access tokens",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_user_says_the_expiry_is_untold_and_refuses_a_sign_in_page() {
        let data = br#"{"authenticatedUser":{"id":"4d2f5b6a-0000-4000-8000-000000000001","providerDisplayName":"CI Reader"},"instanceId":"x"}"#;
        let report = read(&HeaderMap::new(), data).unwrap();
        assert_eq!((report.summary.as_str(), report.expires_at), ("authenticated as CI Reader", None));
        assert!(report.untold.is_some());
        assert!(read(&HeaderMap::new(), b"<html>Sign in</html>").is_err());
    }
}
