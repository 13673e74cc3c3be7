//! A GitHub Actions job asks the runner's token endpoint for a token with the broker's audience
//! (`ACTIONS_ID_TOKEN_REQUEST_URL`, `ACTIONS_ID_TOKEN_REQUEST_TOKEN`; the job needs
//! `permissions: id-token: write`).

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::ci::job_token::{AskToken, Asking, Env, JobToken};
use crate::net::check_url_scheme;

pub const URL_ENV: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
pub const REQUEST_TOKEN_ENV: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

struct TokenEndpoint {
    url: String,
    request_token: SecretString,
}

#[derive(Deserialize)]
struct Answer {
    value: SecretString,
}

pub fn find(env: Env<'_>) -> Option<JobToken> {
    let (url, request_token) = (env(URL_ENV)?, env(REQUEST_TOKEN_ENV)?);
    Some(JobToken::Asked(Box::new(TokenEndpoint { url, request_token: request_token.into() })))
}

impl AskToken for TokenEndpoint {
    fn describe(&self) -> &'static str {
        "GitHub Actions' token endpoint"
    }

    fn ask<'a>(&'a self, http: &'a reqwest::Client, audience: &'a str) -> Asking<'a> {
        Box::pin(async move {
            let failed = |why: String| format!("GitHub Actions' token endpoint: {why}");
            let mut url = check_url_scheme(&self.url).map_err(|e| failed(format!("${URL_ENV}: {e}")))?;
            url.query_pairs_mut().append_pair("audience", audience);
            // The scheme as GitHub's documentation writes it; the value is marked sensitive.
            let mut authorization = HeaderValue::from_str(&["bearer ", self.request_token.expose_secret()].concat())
                .map_err(|_| failed(format!("${REQUEST_TOKEN_ENV} is not a valid header value")))?;
            authorization.set_sensitive(true);
            let response = http
                .get(url)
                .header(AUTHORIZATION, authorization)
                .timeout(FETCH_TIMEOUT)
                .send()
                .await
                .map_err(|e| failed(format!("request failed: {}", e.without_url())))?;
            if !response.status().is_success() {
                return Err(failed(format!("answered HTTP {}", response.status().as_u16())));
            }
            let answer: Answer =
                response.json().await.map_err(|_| failed("the answer is not {\"value\": \"<token>\"}".into()))?;
            Ok(answer.value)
        })
    }
}
