//! One bounded GET to a CI's API, and the pause its rate-limit headers ask for.

use std::time::Duration;

use reqwest::header::{ACCEPT, HeaderMap, RETRY_AFTER};
use secrecy::{ExposeSecret, SecretString};

use super::Error;
use crate::job::CiKind;

/// Far larger than a job answer (GitHub's lists every step); a larger one is refused unread.
pub(super) const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The longest pause a CI's headers can impose: a hostile or broken answer cannot silence the
/// broker's questions for longer.
const MAX_PAUSE: Duration = Duration::from_secs(3600);
/// A 429 that says nothing of when to come back.
const DEFAULT_PAUSE: Duration = Duration::from_secs(60);

pub(super) enum Auth<'a> {
    Bearer(&'a SecretString),
    /// GitLab's `PRIVATE-TOKEN` header.
    PrivateToken(&'a SecretString),
}

pub(super) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    /// How long the CI asks the broker to stop calling, from its rate-limit headers.
    pub pause: Option<Duration>,
}

pub(super) fn client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("ci-creds/", env!("CARGO_PKG_VERSION")))
        .build()
}

pub(super) async fn get(http: &reqwest::Client, kind: CiKind, url: &str, auth: Auth<'_>) -> Result<Answer, Error> {
    let api = super::status::api_name(kind);
    let unreachable = |e: reqwest::Error| Error::Unreachable { api, reason: e.without_url().to_string() };
    let mut request = http.get(url);
    // reqwest marks both headers sensitive; the token is never formatted.
    request = match auth {
        Auth::Bearer(token) => request.bearer_auth(token.expose_secret()),
        Auth::PrivateToken(token) => {
            let mut value = reqwest::header::HeaderValue::from_str(token.expose_secret())
                .map_err(|_| Error::Auth { api, reason: "the token is not a valid header value".into() })?;
            value.set_sensitive(true);
            request.header("PRIVATE-TOKEN", value)
        }
    };
    if kind == CiKind::Github {
        request = request.header(ACCEPT, "application/vnd.github+json").header("X-GitHub-Api-Version", "2022-11-28");
    }
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status().as_u16();
    let pause = pause_from(kind, status, response.headers(), now_epoch());
    if let Some(length) = response.content_length()
        && length > MAX_ANSWER_BYTES as u64
    {
        return Err(Error::TooLarge { api, limit: MAX_ANSWER_BYTES });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Error::TooLarge { api, limit: MAX_ANSWER_BYTES });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer { status, body, pause })
}

fn now_epoch() -> u64 {
    time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64
}

/// The pause an answer's headers ask for. `Retry-After` (seconds) wherever it is sent; GitHub's
/// `x-ratelimit-remaining: 0` until `x-ratelimit-reset` (epoch seconds); GitLab's
/// `RateLimit-Reset` (epoch seconds) on a 429 or with nothing remaining; Buildkite's
/// `RateLimit-Remaining: 0` for `RateLimit-Reset` (seconds from now).
pub(super) fn pause_from(kind: CiKind, status: u16, headers: &HeaderMap, now_epoch: u64) -> Option<Duration> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<u64>().ok();
    let retry_after = number(RETRY_AFTER.as_str()).map(Duration::from_secs);
    let until_epoch = |reset: u64| Duration::from_secs(reset.saturating_sub(now_epoch).max(1));
    let exhausted = match kind {
        CiKind::Github => {
            (number("x-ratelimit-remaining") == Some(0)).then(|| number("x-ratelimit-reset").map(until_epoch)).flatten()
        }
        CiKind::Gitlab => (status == 429 || number("ratelimit-remaining") == Some(0))
            .then(|| number("ratelimit-reset").map(until_epoch))
            .flatten(),
        CiKind::Buildkite => (number("ratelimit-remaining") == Some(0))
            .then(|| number("ratelimit-reset").map(|seconds| Duration::from_secs(seconds.max(1))))
            .flatten(),
        CiKind::Circleci => None,
    };
    let pause = retry_after.or(exhausted).or((status == 429).then_some(DEFAULT_PAUSE))?;
    Some(pause.min(MAX_PAUSE))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (reqwest::header::HeaderName::from_static(name), value.parse().unwrap()))
            .collect()
    }

    #[test]
    fn each_ci_s_rate_limit_headers_give_the_documented_pause() {
        const NOW: u64 = 1_800_000_000;
        let s = Duration::from_secs;
        type Case<'a> = (CiKind, u16, &'a [(&'static str, &'a str)], Option<Duration>);
        let cases: &[Case] = &[
            (CiKind::Github, 200, &[("x-ratelimit-remaining", "4999"), ("x-ratelimit-reset", "1800000600")], None),
            (CiKind::Github, 200, &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1800000600")], Some(s(600))),
            (CiKind::Github, 403, &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1799999000")], Some(s(1))),
            (CiKind::Github, 429, &[("retry-after", "30")], Some(s(30))),
            (CiKind::Github, 429, &[], Some(s(60))),
            (CiKind::Gitlab, 200, &[("ratelimit-remaining", "1999"), ("ratelimit-reset", "1800000060")], None),
            (CiKind::Gitlab, 429, &[("ratelimit-reset", "1800000045")], Some(s(45))),
            (CiKind::Gitlab, 200, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "1800000010")], Some(s(10))),
            (CiKind::Buildkite, 200, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "42")], Some(s(42))),
            (CiKind::Buildkite, 200, &[("ratelimit-remaining", "150"), ("ratelimit-reset", "42")], None),
            (CiKind::Buildkite, 429, &[("ratelimit-remaining", "0"), ("ratelimit-reset", "20")], Some(s(20))),
            (
                CiKind::Buildkite,
                200,
                &[("ratelimit-remaining", "0"), ("ratelimit-reset", "999999999")],
                Some(MAX_PAUSE),
            ),
            (CiKind::Gitlab, 500, &[("ratelimit-reset", "garbage")], None),
        ];
        for (kind, status, pairs, expected) in cases {
            assert_eq!(pause_from(*kind, *status, &headers(pairs), NOW), *expected, "{kind:?} {status} {pairs:?}");
        }
    }
}
