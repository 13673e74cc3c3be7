//! `ci-creds check` of the GitHub API's read credentials. With a token: `GET /rate_limit`,
//! which every token may call and which does not count against the rate limit (GitHub's REST
//! docs, "Get rate limit status for the authenticated user"); a token GitHub does not take is
//! answered 401 ("Authenticating to the REST API": invalid credentials return 401). A
//! fine-grained or expiring personal access token's expiry is told in the
//! `github-authentication-token-expiration` response header, `2021-10-07 19:07:53 UTC` (GitHub's
//! docs, "Managing your personal access tokens"; seen in GitHub's answers). With an App, the App's
//! JWT is checked with `GET /app` instead (`ci_api::client`).

use http::HeaderMap;
use time::PrimitiveDateTime;
use time::macros::format_description;

use crate::ci::CredentialsReport;
use crate::ci::webhook::header;

pub(super) const PATH: &str = "/rate_limit";

pub(super) fn read(headers: &HeaderMap, body: &[u8]) -> Result<CredentialsReport, String> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .filter(|answer| answer.get("resources").is_some())
        .ok_or("the answer to /rate_limit is not GitHub's")?;
    let expires_at = match header(headers, "github-authentication-token-expiration") {
        None => None,
        Some(value) => Some(expiry(value).ok_or("the token's expiry header does not parse")?),
    };
    Ok(CredentialsReport { expires_at, summary: "token accepted".into(), untold: None })
}

/// `2021-10-07 19:07:53 UTC` (or with `+0000`), as unix seconds.
fn expiry(value: &str) -> Option<i64> {
    let value = value.trim();
    let local = value.strip_suffix(" UTC").or_else(|| value.strip_suffix(" +0000"))?;
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    Some(PrimitiveDateTime::parse(local, format).ok()?.assume_utc().unix_timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expiry_header_is_read_as_utc_and_its_absence_is_no_expiry() {
        assert_eq!(expiry("2021-10-07 19:07:53 UTC"), Some(1_633_633_673));
        assert_eq!(expiry("2021-10-07 19:07:53 +0000"), Some(1_633_633_673));
        assert_eq!(expiry("tomorrow"), None);
        let body = br#"{"resources":{"core":{"limit":5000}},"rate":{"limit":5000}}"#;
        assert_eq!(read(&HeaderMap::new(), body).unwrap().expires_at, None);
        assert!(read(&HeaderMap::new(), b"<html>").is_err());
    }
}
