//! What the CIs' unit tests share: the fixtures, the HTTP Basic header of CIs that sign nothing,
//! deliveries authenticated by a shared token, and a job API's answer read as the broker reads it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderValue};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::{CiKind, Job, JobLocator, JobReport, Liveness, Verdict};

/// The secret the webhook tests configure and their deliveries carry.
pub const SECRET: &str = "runner-facts-secret";

/// A file of `tests/fixtures/`, as bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::read(dir.join(name)).expect("fixture readable")
}

/// A JSON file of `tests/fixtures/`.
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).expect("fixture is JSON")
}

/// `Authorization: Basic …` for `user:password`, or no header at all.
pub fn basic_auth(credentials: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(credentials) = credentials {
        let value = format!("Basic {}", STANDARD.encode(credentials));
        headers.insert("authorization", HeaderValue::from_str(&value).expect("base64 is header text"));
    }
    headers
}

pub fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(name, value)| (http::HeaderName::from_static(name), HeaderValue::from_str(value).unwrap()))
        .collect()
}

/// A GitLab or Buildkite delivery of `event`, carrying `SECRET` as its token.
pub fn by_token(source: CiKind, event: (&'static str, &str), body: &[u8]) -> Verdict {
    let token_header = if source == CiKind::Gitlab { "x-gitlab-token" } else { "x-buildkite-token" };
    let headers = headers(&[(token_header, SECRET.into()), (event.0, event.1.into())]);
    source.ci().read_webhook(&headers, body, &SecretString::from(SECRET)).unwrap()
}

/// `answer` with `field` set to `value`, as bytes.
pub fn with(mut answer: Value, field: &str, value: Value) -> Vec<u8> {
    answer[field] = value;
    serde_json::to_vec(&answer).unwrap()
}

/// Where the broker would ask about job `job_id` of `kind`.
pub fn located(kind: CiKind, job_id: &str) -> JobLocator {
    let mut job = Job::new("ci", job_id, "octo-org/octo-repo");
    job.repository_id = Some("20".into());
    job.claims = json!({"organization_slug": "acme-inc", "pipeline_slug": "app", "build_number": 1})
        .as_object()
        .cloned()
        .unwrap();
    kind.ci().api.unwrap().locate(&job).unwrap()
}

/// Reads `body` as the answer about the job it names, as the broker asking about that job would.
pub fn parse_answer(kind: CiKind, body: &[u8]) -> Result<JobReport, String> {
    let named = serde_json::from_slice::<Value>(body).ok().map(|answer| parse_answer_id(&answer));
    let locator = located(kind, named.as_deref().unwrap_or("unnamed"));
    kind.ci().api.unwrap().read_answer(&locator, body)
}

pub fn parse_answer_id(answer: &Value) -> String {
    match &answer["id"] {
        Value::String(id) => id.clone(),
        id => id.to_string(),
    }
}

/// Each status of `cases` set in its answer's field reads as the liveness the case expects.
pub fn assert_statuses_map(cases: &[(CiKind, &Value, &str, &[&str], Liveness)]) {
    for (kind, answer, field, statuses, expected) in cases {
        for status in *statuses {
            let report = parse_answer(*kind, &with((*answer).clone(), field, json!(status))).unwrap();
            assert_eq!(report.liveness, *expected, "{kind:?} {status}");
            assert_eq!(report.status, *status);
        }
    }
}

/// The finished `answer` ends the job it names, and is unreadable when asked about `other_job`.
pub fn assert_answer_about_another_job_is_unreadable(kind: CiKind, answer: Value, other_job: &str) {
    let body = serde_json::to_vec(&answer).unwrap();
    let api = kind.ci().api.unwrap();
    let about_it = api.read_answer(&located(kind, &parse_answer_id(&answer)), &body).unwrap();
    assert_eq!(about_it.liveness, Liveness::Finished, "{kind:?}");
    let about_another = api.read_answer(&located(kind, other_job), &body);
    assert!(about_another.unwrap_err().contains("not the job asked about"), "{kind:?}");
}

/// A job of `kind` in `repository` with `claims`, as the locator tests give `JobLocator::of`.
pub fn locator_job(kind: CiKind, repository: &str, claims: Value) -> Job {
    let mut job = Job::new("ci", "9/1", repository);
    job.kind = Some(kind);
    job.repository_id = claims.get("job_project_id").and_then(Value::as_str).map(str::to_owned);
    job.claims = claims.as_object().cloned().unwrap_or_default();
    job
}
