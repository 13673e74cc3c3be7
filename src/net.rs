//! Outbound HTTP shared by identity (discovery, JWKS) and backends: bounded, no redirects,
//! and only `https://` unless the host is loopback.

use std::net::IpAddr;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use url::{Host, Url};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts `https://` URLs, and `http://` only for loopback hosts (local development and tests).
pub fn check_url_scheme(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw).map_err(|e| format!("not a URL ({e})"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err("http:// is accepted only for loopback hosts; use https://".into()),
        other => Err(format!("unsupported scheme `{other}`; use https://")),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// A client for the broker's own outbound calls.
#[derive(Clone)]
pub struct HttpClient {
    inner: reqwest::Client,
}

impl HttpClient {
    pub fn new() -> Result<Self, reqwest::Error> {
        let inner = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("ci-creds/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { inner })
    }

    /// GETs `url` and succeeds on a 2xx answer, whatever its body.
    pub async fn get_ok(&self, url: &str) -> Result<(), String> {
        let url = check_url_scheme(url)?;
        let response = self.inner.get(url).send().await.map_err(|e| format!("request failed: {e}"))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(format!("answered HTTP {}", response.status().as_u16()))
        }
    }

    /// GETs a JSON document of at most `max_bytes`.
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str, max_bytes: usize) -> Result<T, String> {
        let url = check_url_scheme(url)?;
        self.read_json(self.inner.get(url), max_bytes).await
    }

    /// GETs a JSON document, authenticated by a secret header (never logged: reqwest marks it
    /// sensitive).
    pub async fn get_json_with_secret_header<T: DeserializeOwned>(
        &self,
        url: &str,
        header: &'static str,
        secret: &SecretString,
        max_bytes: usize,
    ) -> Result<T, String> {
        let url = check_url_scheme(url)?;
        let mut value = reqwest::header::HeaderValue::from_str(secret.expose_secret())
            .map_err(|_| "the secret is not a valid header value".to_owned())?;
        value.set_sensitive(true);
        self.read_json(self.inner.get(url).header(header, value), max_bytes).await
    }

    async fn read_json<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        max_bytes: usize,
    ) -> Result<T, String> {
        let mut response = request.send().await.map_err(|e| format!("request failed: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("answered HTTP {}", response.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading the answer failed: {e}"))? {
            if body.len() + chunk.len() > max_bytes {
                return Err(format!("the document is larger than {max_bytes} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("the document does not parse: {e}"))
    }
}

/// Characters a path segment carries as they are: RFC 3986's unreserved set (§2.3), which
/// producers should not encode. Everything else is percent-encoded: `/` so a value stays one
/// segment, `%` and reserved characters so none is read as syntax.
const UNRESERVED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `value` as one path segment of a URL. A value of `.` or `..` has its dots encoded, so no
/// value can become a dot-segment that climbs the path.
pub fn path_segment(value: &str) -> String {
    match value {
        "." => "%2E".to_owned(),
        ".." => "%2E%2E".to_owned(),
        _ => percent_encoding::utf8_percent_encode(value, UNRESERVED).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::path_segment;

    #[test]
    fn a_path_segment_encodes_only_what_a_segment_needs() {
        for (value, segment) in [
            ("octo-org", "octo-org"),
            ("Octo_Repo.v2~x", "Octo_Repo.v2~x"),
            ("0184990a-477b-4fa8", "0184990a-477b-4fa8"),
            ("a/b", "a%2Fb"),
            ("app/..", "app%2F.."),
            ("..", "%2E%2E"),
            (".", "%2E"),
            ("...", "..."),
            ("a b?c#d%e", "a%20b%3Fc%23d%25e"),
            ("häm", "h%C3%A4m"),
        ] {
            assert_eq!(path_segment(value), segment, "{value}");
        }
    }
}
