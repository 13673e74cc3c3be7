//! One bounded GET to a CI's API, and the pause its rate-limit headers ask for.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use secrecy::{ExposeSecret, SecretString};

use super::Error;
use crate::ci::{JobApi, TokenHeader};

/// Far larger than a job answer (GitHub's lists every step); a larger one is refused unread.
pub(super) const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The longest pause a CI's headers can impose: a hostile or broken answer cannot silence the
/// broker's questions for longer.
const MAX_PAUSE: Duration = Duration::from_secs(3600);
/// A 429 that says nothing of when to come back.
const DEFAULT_PAUSE: Duration = Duration::from_secs(60);

pub(super) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    /// How long the CI asks the broker to stop calling, from its rate-limit headers.
    pub pause: Option<Duration>,
    pub headers: HeaderMap,
}

pub(super) fn client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("ci-creds/", env!("CARGO_PKG_VERSION")))
        .build()
}

pub(super) async fn get(
    http: &reqwest::Client,
    api: &dyn JobApi,
    url: &str,
    user: Option<&str>,
    token: &SecretString,
) -> Result<Answer, Error> {
    let name = api.name();
    let unreachable = |e: reqwest::Error| Error::Unreachable { api: name, reason: e.without_url().to_string() };
    let mut request = http.get(url);
    // reqwest marks both headers sensitive; the token is never formatted.
    request = match api.token_header() {
        TokenHeader::Bearer => request.bearer_auth(token.expose_secret()),
        TokenHeader::Basic => request.basic_auth(user.unwrap_or_default(), Some(token.expose_secret())),
        TokenHeader::BasicPassword => request.basic_auth("", Some(token.expose_secret())),
        TokenHeader::Named(header) => {
            let mut value = HeaderValue::from_str(token.expose_secret())
                .map_err(|_| Error::Auth { api: name, reason: "the token is not a valid header value".into() })?;
            value.set_sensitive(true);
            request.header(header, value)
        }
    };
    for (header, value) in api.headers() {
        request = request.header(*header, *value);
    }
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status().as_u16();
    let now = crate::clock::now().max(0) as u64;
    let pause = pause_from(api, status, response.headers(), now);
    let headers = response.headers().clone();
    if let Some(length) = response.content_length()
        && length > MAX_ANSWER_BYTES as u64
    {
        return Err(Error::TooLarge { api: name, limit: MAX_ANSWER_BYTES });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Error::TooLarge { api: name, limit: MAX_ANSWER_BYTES });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer { status, body, pause, headers })
}

/// The pause an answer's headers ask for: `Retry-After` (seconds) wherever it is sent, else what
/// the CI's own rate-limit headers say, else a minute after a 429 that says nothing; never more
/// than `MAX_PAUSE`.
pub(super) fn pause_from(api: &dyn JobApi, status: u16, headers: &HeaderMap, now_epoch: u64) -> Option<Duration> {
    let retry_after = crate::ci::header_number(headers, RETRY_AFTER.as_str()).map(Duration::from_secs);
    let pause = retry_after
        .or_else(|| api.rate_limit_pause(status, headers, now_epoch))
        .or((status == 429).then_some(DEFAULT_PAUSE))?;
    Some(pause.min(MAX_PAUSE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ci::CiKind;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (reqwest::header::HeaderName::from_static(name), value.parse().unwrap()))
            .collect()
    }

    #[test]
    fn retry_after_comes_first_a_bare_429_pauses_a_minute_and_no_pause_exceeds_an_hour() {
        const NOW: u64 = 1_800_000_000;
        let s = Duration::from_secs;
        for api in CiKind::ALL.into_iter().filter_map(|kind| kind.ci().api) {
            let name = api.name();
            assert_eq!(pause_from(api, 429, &headers(&[("retry-after", "30")]), NOW), Some(s(30)), "{name}");
            assert_eq!(pause_from(api, 429, &headers(&[]), NOW), Some(s(60)), "{name}");
            assert_eq!(pause_from(api, 200, &headers(&[]), NOW), None, "{name}");
            assert_eq!(pause_from(api, 429, &headers(&[("retry-after", "999999999")]), NOW), Some(MAX_PAUSE), "{name}");
            let exhausted_for_long = [
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "2800000000"),
                ("ratelimit-remaining", "0"),
                ("ratelimit-reset", "2800000000"),
            ];
            // Jenkins sets no rate limits, so it sends no such headers.
            let reads_its_headers = api.rate_limit_pause(200, &headers(&exhausted_for_long), NOW).is_some();
            let pause = pause_from(api, 200, &headers(&exhausted_for_long), NOW);
            assert_eq!(pause, reads_its_headers.then_some(MAX_PAUSE), "{name}");
        }
    }
}
