//! Outbound HTTP shared by identity (discovery, JWKS) and backends: bounded, no redirects,
//! and only `https://` unless the host is loopback.

use std::net::IpAddr;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
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

    /// POSTs `body` as JSON to `url` (checked by [`check_url_scheme`] when it was made) with
    /// `header` set to `secret` (marked sensitive), within `timeout`: the answer's status and its
    /// body of at most `max_bytes`, whatever the status.
    pub async fn post_json_with_secret_header<B: Serialize + ?Sized>(
        &self,
        url: &Url,
        (header, secret): (&'static str, &HeaderValue),
        body: &B,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(StatusCode, Vec<u8>), String> {
        self.send_json(self.inner.post(url.clone()).header(header, secret.clone()), body, timeout, max_bytes).await
    }

    /// POSTs `body` as JSON to `url` (checked when it was made) without credentials: a login,
    /// whose secret is in the body. The answer's status and its body of at most `max_bytes`.
    pub async fn post_json<B: Serialize + ?Sized>(
        &self,
        url: &Url,
        body: &B,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(StatusCode, Vec<u8>), String> {
        self.send_json(self.inner.post(url.clone()), body, timeout, max_bytes).await
    }

    async fn send_json<B: Serialize + ?Sized>(
        &self,
        request: reqwest::RequestBuilder,
        body: &B,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(StatusCode, Vec<u8>), String> {
        let body = serde_json::to_vec(body).map_err(|e| format!("the request does not encode: {e}"))?;
        let request = request.timeout(timeout).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        let response = request.send().await.map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        Ok((status, read_bounded(response, max_bytes).await?))
    }

    /// GETs `url` (checked by [`check_url_scheme`] when it was made) with `header` set to
    /// `secret` (marked sensitive), within `timeout`: the answer's status and its body of at most
    /// `max_bytes`, whatever the status.
    pub async fn get_with_secret_header(
        &self,
        url: &Url,
        header: (&'static str, &HeaderValue),
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(StatusCode, Vec<u8>), String> {
        self.with_secret_header(reqwest::Method::GET, url, header, timeout, max_bytes).await
    }

    /// `method` on `url` as [`Self::get_with_secret_header`] GETs it.
    pub async fn with_secret_header(
        &self,
        method: reqwest::Method,
        url: &Url,
        (header, secret): (&'static str, &HeaderValue),
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<(StatusCode, Vec<u8>), String> {
        let request = self.inner.request(method, url.clone()).timeout(timeout).header(header, secret.clone());
        let response = request.send().await.map_err(|e| format!("request failed: {}", e.without_url()))?;
        let status = response.status();
        Ok((status, read_bounded(response, max_bytes).await?))
    }

    async fn read_json<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        max_bytes: usize,
    ) -> Result<T, String> {
        let response = request.send().await.map_err(|e| format!("request failed: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("answered HTTP {}", response.status().as_u16()));
        }
        let body = read_bounded(response, max_bytes).await?;
        serde_json::from_slice(&body).map_err(|e| format!("the document does not parse: {e}"))
    }
}

/// `response`'s body, refused once it grows past `max_bytes`.
async fn read_bounded(mut response: reqwest::Response, max_bytes: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("reading the answer failed: {e}"))? {
        if body.len() + chunk.len() > max_bytes {
            return Err(format!("the document is larger than {max_bytes} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Characters a path segment carries as they are: RFC 3986's unreserved set (§2.3), which
/// producers should not encode. Everything else is percent-encoded: `/` so a value stays one
/// segment, `%` and reserved characters so none is read as syntax.
const UNRESERVED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `value` as one path segment of a URL, or `None` for a value that cannot be one: empty, `.`
/// or `..`. URL parsers read `%2E%2E` as `..` too (the WHATWG URL standard does), so no encoding
/// keeps such a value from climbing the path; it is refused instead. (A `%` in a value is
/// encoded, so `%2e` in a value never becomes a dot.)
pub fn path_segment(value: &str) -> Option<String> {
    if matches!(value, "" | "." | "..") {
        return None;
    }
    Some(percent_encoding::utf8_percent_encode(value, UNRESERVED).to_string())
}

#[cfg(test)]
mod tests {
    use super::path_segment;

    #[test]
    fn a_path_segment_encodes_only_what_a_segment_needs_and_is_never_a_dot_segment() {
        for (value, segment) in [
            ("octo-org", Some("octo-org")),
            ("Octo_Repo.v2~x", Some("Octo_Repo.v2~x")),
            ("0184990a-477b-4fa8", Some("0184990a-477b-4fa8")),
            ("a/b", Some("a%2Fb")),
            ("app/..", Some("app%2F..")),
            ("...", Some("...")),
            ("a b?c#d%e", Some("a%20b%3Fc%23d%25e")),
            ("%2e%2E", Some("%252e%252E")),
            ("häm", Some("h%C3%A4m")),
            ("..", None),
            (".", None),
            ("", None),
        ] {
            assert_eq!(path_segment(value).as_deref(), segment, "{value}");
        }
    }
}
