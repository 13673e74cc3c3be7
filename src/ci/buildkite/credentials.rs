//! `ci-creds check` of the Buildkite API's read token: `GET /v2/access-token` answers the token
//! that authenticates the call, `{"uuid": …, "scopes": […]}`, and needs no scope itself
//! (Buildkite's docs, "Access token API", "Get the current token"). It tells no expiry.

use http::HeaderMap;
use serde::Deserialize;

use crate::ci::CredentialsReport;
use crate::ci::bounded_fact;

pub(super) const PATH: &str = "/v2/access-token";

#[derive(Deserialize)]
struct Token {
    scopes: Vec<String>,
}

pub(super) fn read(_headers: &HeaderMap, body: &[u8]) -> Result<CredentialsReport, String> {
    let token: Token = serde_json::from_slice(body).map_err(|e| format!("the answer does not parse: {e}"))?;
    // The jobs API reads builds (`read_builds`); an agent's tags are read with `read_agents`.
    if !token.scopes.iter().any(|scope| scope == "read_builds") {
        return Err("the token lacks the read_builds scope the jobs API needs".into());
    }
    let scopes: Vec<String> = token.scopes.into_iter().take(30).map(bounded_fact).collect();
    Ok(CredentialsReport {
        expires_at: None,
        summary: format!("token accepted, scopes {}", scopes.join(", ")),
        untold: Some(
            "Buildkite's answer tells no expiry: check the token's under Personal Settings → API Access Tokens",
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_without_read_builds_is_refused() {
        let token = br#"{"uuid":"b63254c0-3271-4a98-8270-7cfbd6c2f14e","scopes":["read_builds","read_agents"]}"#;
        assert!(read(&HeaderMap::new(), token).unwrap().summary.contains("read_builds"));
        let narrow = br#"{"uuid":"b63254c0-3271-4a98-8270-7cfbd6c2f14e","scopes":["read_pipelines"]}"#;
        assert!(read(&HeaderMap::new(), narrow).unwrap_err().contains("read_builds"));
    }
}
