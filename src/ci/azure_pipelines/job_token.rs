//! An Azure Pipelines job asks Azure DevOps for its pipeline's OIDC token:
//! `POST $SYSTEM_OIDCREQUESTURI?api-version=7.1` with the job's access token as a bearer, a fresh
//! token each time. Every step sees the request URI; the access token (`System.AccessToken`) is a
//! secret variable, which reaches a step only where the pipeline maps it into the step's `env`.
//! Azure fixes the audience, so the broker's is not sent.

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::ci::NamedJob;
use crate::ci::job_token::{AskToken, Asking, Env, JobToken};
use crate::net::check_url_scheme;

pub const REQUEST_URI_ENV: &str = "SYSTEM_OIDCREQUESTURI";
pub const ACCESS_TOKEN_ENV: &str = "SYSTEM_ACCESSTOKEN";
/// The job's record in its run's timeline, and which attempt of it runs: every step sees both.
pub const JOB_ID_ENV: &str = "SYSTEM_JOBID";
pub const JOB_ATTEMPT_ENV: &str = "SYSTEM_JOBATTEMPT";
const API_VERSION: &str = "7.1";
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);
/// A pipeline token is a JWT of a few kilobytes; an answer far larger is not one.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Where the job is, what is missing, and how to fix it: said when the access token is not there.
const NO_ACCESS_TOKEN: &str = "$SYSTEM_OIDCREQUESTURI is set but $SYSTEM_ACCESSTOKEN is not: Azure Pipelines gives a step the job's access token only where the pipeline maps it into the step's environment, `env: SYSTEM_ACCESSTOKEN: $(System.AccessToken)` (or pass a token with --token-file or --token-env)";

struct TokenRequest {
    uri: String,
    access_token: Option<SecretString>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    oidc_token: Option<SecretString>,
}

/// Found whenever the request URI is set, so that a missing access token is reported as such
/// instead of as "no CI token found".
pub fn find(env: Env<'_>) -> Option<JobToken> {
    let uri = env(REQUEST_URI_ENV)?;
    let access_token = env(ACCESS_TOKEN_ENV).map(SecretString::from);
    Some(JobToken::Asked(Box::new(TokenRequest { uri, access_token })))
}

/// The job within the run, when both its id and its attempt are set: the exchange names it, so
/// that the credentials are bound to this job rather than to the whole run. An error names the
/// variable that is wrong, not its value.
pub fn named_job(env: Env<'_>) -> Option<Result<NamedJob, String>> {
    let (id, attempt) = (env(JOB_ID_ENV)?, env(JOB_ATTEMPT_ENV)?);
    let named = match attempt.trim().parse::<u32>() {
        Ok(attempt) => NamedJob::new(id.trim(), attempt),
        Err(_) => Err(format!("${JOB_ATTEMPT_ENV} is not a whole number")),
    };
    Some(named.map_err(|why| format!("${JOB_ID_ENV} and ${JOB_ATTEMPT_ENV} do not name a job: {why}")))
}

impl AskToken for TokenRequest {
    fn describe(&self) -> &'static str {
        "Azure Pipelines' OIDC token request"
    }

    fn ask<'a>(&'a self, http: &'a reqwest::Client, _audience: &'a str) -> Asking<'a> {
        Box::pin(async move {
            let failed = |why: String| format!("{}: {why}", self.describe());
            let access_token = self.access_token.as_ref().ok_or_else(|| failed(NO_ACCESS_TOKEN.to_owned()))?;
            let mut url = check_url_scheme(&self.uri).map_err(|e| failed(format!("${REQUEST_URI_ENV}: {e}")))?;
            if !url.query_pairs().any(|(name, _)| name == "api-version") {
                url.query_pairs_mut().append_pair("api-version", API_VERSION);
            }
            let mut authorization = HeaderValue::from_str(&["Bearer ", access_token.expose_secret()].concat())
                .map_err(|_| failed(format!("${ACCESS_TOKEN_ENV} is not a valid header value")))?;
            authorization.set_sensitive(true);
            let mut response = http
                .post(url)
                .header(AUTHORIZATION, authorization)
                .header(CONTENT_TYPE, "application/json")
                .body("{}")
                .timeout(FETCH_TIMEOUT)
                .send()
                .await
                .map_err(|e| failed(format!("request failed: {}", e.without_url())))?;
            let status = response.status();
            if !status.is_success() {
                let hint = match status.as_u16() {
                    401 | 403 => format!(
                        "; is ${ACCESS_TOKEN_ENV} this job's `$(System.AccessToken)`, and may the job's build identity use it?"
                    ),
                    _ => String::new(),
                };
                return Err(failed(format!("answered HTTP {}{hint}", status.as_u16())));
            }
            let mut body = Vec::new();
            while let Some(chunk) =
                response.chunk().await.map_err(|e| failed(format!("reading the answer failed: {}", e.without_url())))?
            {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(failed(format!("the answer is larger than {MAX_ANSWER_BYTES} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            let answer: Answer = serde_json::from_slice(&body)
                .map_err(|_| failed("the answer is not {\"oidcToken\": \"<token>\"}".to_owned()))?;
            match answer.oidc_token {
                Some(token) if !token.expose_secret().trim().is_empty() => Ok(token.expose_secret().trim().into()),
                _ => Err(failed("the answer holds no `oidcToken`".to_owned())),
            }
        })
    }
}

// The endpoint stand-in is an axum server, which only the server build has.
#[cfg(all(test, feature = "server"))]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use axum::body::Bytes;
    use axum::http::{HeaderMap, StatusCode, Uri};
    use axum::response::{IntoResponse, Response};
    use secrecy::ExposeSecret;

    use super::*;

    const ACCESS_TOKEN: &str = "azure-access-token-7c1e";

    /// What the endpoint was asked, one entry per request.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<(String, HeaderMap, Bytes)>>>);

    /// A loopback token endpoint answering `status` and `body` to every request.
    async fn endpoint(status: StatusCode, body: &'static str) -> (String, Seen) {
        let seen = Seen::default();
        let recorded = seen.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body_in: Bytes| {
            let recorded = recorded.clone();
            async move {
                recorded.0.lock().unwrap().push((uri.to_string(), headers, body_in));
                let response: Response = (status, [("content-type", "application/json")], body).into_response();
                response
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://{addr}/org/prj/_apis/distributedtask/hubs/build/plans/p/jobs/j/oidctoken"), seen)
    }

    fn found(vars: &[(&str, &str)]) -> Option<JobToken> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        find(&|name| vars.get(name).cloned())
    }

    async fn ask(vars: &[(&str, &str)]) -> Result<SecretString, String> {
        let Some(JobToken::Asked(asking)) = found(vars) else { panic!("Azure Pipelines not detected") };
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        asking.ask(&http, "https://ci-creds.example").await
    }

    fn named(vars: &[(&str, &str)]) -> Option<Result<NamedJob, String>> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        named_job(&|name| vars.get(name).cloned())
    }

    #[test]
    fn azure_job_is_named_by_its_id_and_attempt_together() {
        const JOB: &str = "E87E3D16-29b0-5003-7d86-82b704b96244";
        let job = named(&[(JOB_ID_ENV, JOB), (JOB_ATTEMPT_ENV, "2")]).unwrap().unwrap();
        assert_eq!((job.id.as_str(), job.attempt), ("e87e3d16-29b0-5003-7d86-82b704b96244", 2));
        assert_eq!(named(&[(JOB_ID_ENV, JOB)]), None);
        assert_eq!(named(&[(JOB_ATTEMPT_ENV, "1")]), None);
        for (id, attempt, wrong) in
            [(JOB, "x", "$SYSTEM_JOBATTEMPT is not"), (JOB, "0", "must be 1 to 1000"), ("__default", "1", "GUID")]
        {
            let error = named(&[(JOB_ID_ENV, id), (JOB_ATTEMPT_ENV, attempt)]).unwrap().unwrap_err();
            assert!(error.contains(wrong), "{error}");
        }
    }

    #[test]
    fn azure_pipelines_is_detected_by_the_request_uri_alone() {
        assert!(found(&[(ACCESS_TOKEN_ENV, ACCESS_TOKEN)]).is_none());
        let Some(JobToken::Asked(asking)) = found(&[(REQUEST_URI_ENV, "https://dev.azure.com/o")]) else {
            panic!("not asked")
        };
        assert_eq!(asking.describe(), "Azure Pipelines' OIDC token request");
    }

    #[tokio::test]
    async fn azure_token_is_posted_for_with_the_access_token_and_no_audience() {
        let (uri, seen) = endpoint(StatusCode::OK, r#"{"oidcToken": "eyJ.azure.jwt"}"#).await;
        let token = ask(&[(REQUEST_URI_ENV, &uri), (ACCESS_TOKEN_ENV, ACCESS_TOKEN)]).await.unwrap();
        assert_eq!(token.expose_secret(), "eyJ.azure.jwt");
        let seen = seen.0.lock().unwrap();
        let (path, headers, body) = &seen[0];
        assert!(path.ends_with("/oidctoken?api-version=7.1"), "{path}");
        assert_eq!(headers["authorization"], format!("Bearer {ACCESS_TOKEN}").as_str());
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(&body[..], b"{}");
    }

    #[tokio::test]
    async fn azure_api_version_is_appended_to_a_query_and_not_repeated() {
        let (uri, seen) = endpoint(StatusCode::OK, r#"{"oidcToken": "t"}"#).await;
        for (given, asked) in
            [("?x=1", "?x=1&api-version=7.1"), ("?api-version=7.2-preview", "?api-version=7.2-preview")]
        {
            ask(&[(REQUEST_URI_ENV, &format!("{uri}{given}")), (ACCESS_TOKEN_ENV, ACCESS_TOKEN)]).await.unwrap();
            let last = seen.0.lock().unwrap().last().unwrap().0.clone();
            assert!(last.ends_with(&format!("/oidctoken{asked}")), "{given}: {last}");
        }
    }

    #[tokio::test]
    async fn azure_without_the_access_token_says_how_to_map_it() {
        let (uri, seen) = endpoint(StatusCode::OK, r#"{"oidcToken": "t"}"#).await;
        let error = ask(&[(REQUEST_URI_ENV, &uri)]).await.unwrap_err();
        assert!(error.contains("$SYSTEM_ACCESSTOKEN is not"), "{error}");
        assert!(error.contains("env: SYSTEM_ACCESSTOKEN: $(System.AccessToken)"), "{error}");
        assert!(seen.0.lock().unwrap().is_empty(), "nothing asked without it");
    }

    #[tokio::test]
    async fn azure_refusals_and_bad_answers_are_errors_without_secrets() {
        let big: &'static str = Box::leak(format!(r#"{{"oidcToken": "{}"}}"#, "a".repeat(MAX_ANSWER_BYTES)).into());
        for (status, body, expected) in [
            (StatusCode::UNAUTHORIZED, "{}", "answered HTTP 401; is $SYSTEM_ACCESSTOKEN this job's"),
            (StatusCode::INTERNAL_SERVER_ERROR, "{}", "answered HTTP 500"),
            (StatusCode::FOUND, "{}", "answered HTTP 302"),
            (StatusCode::OK, r#"{"value": "t"}"#, "holds no `oidcToken`"),
            (StatusCode::OK, r#"{"oidcToken": " "}"#, "holds no `oidcToken`"),
            (StatusCode::OK, "<html>", "the answer is not {\"oidcToken\": \"<token>\"}"),
            (StatusCode::OK, big, "larger than 65536 bytes"),
        ] {
            let (uri, _) = endpoint(status, body).await;
            let error = ask(&[(REQUEST_URI_ENV, &uri), (ACCESS_TOKEN_ENV, ACCESS_TOKEN)]).await.unwrap_err();
            assert!(error.starts_with("Azure Pipelines' OIDC token request: "), "{error}");
            assert!(error.contains(expected), "{status}: {error}");
            assert!(!error.contains(ACCESS_TOKEN), "{error}");
        }
    }

    #[tokio::test]
    async fn azure_request_uri_must_be_https_or_loopback() {
        let error = ask(&[(REQUEST_URI_ENV, "http://dev.azure.com/o/oidctoken"), (ACCESS_TOKEN_ENV, ACCESS_TOKEN)])
            .await
            .unwrap_err();
        assert!(error.contains("$SYSTEM_OIDCREQUESTURI: http:// is accepted only for loopback hosts"), "{error}");
    }
}
