//! GitLab's and Buildkite's job APIs as they document them, on loopback: the job status call
//! answered per job from the fixtures of `tests/fixtures/`, only to the server's own token, with
//! each vendor's rate-limit headers on every answer. Every request is recorded, so tests can
//! assert what the broker asked and how often. GitHub's jobs API is in `github_api.rs`.
//!
//! A job lives where its fixture says: GitLab project 20 (`my-group/my-project`), Buildkite
//! organization `acme-inc`, pipeline `super-duper-app`, build 1. Asked anywhere else, the
//! stand-in answers 404 as the vendor does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::fixture;

/// How the stand-in answers a job's status call.
#[derive(Clone, Debug)]
pub enum JobAnswer {
    /// 200 with the fixture, its status field set to this value (GitHub `status`:
    /// "in_progress", "completed" (with "conclusion": "success"), "queued", ...; GitLab `status`:
    /// "running", "success", "failed", ...; Buildkite `state`: "running", "passed", ...). The
    /// fixture's `id` is the job id asked for.
    Status(&'static str),
    /// 200 with the running fixture, these top-level fields set over it (the runner a test
    /// wants: GitHub's `runner_group_name`, GitLab's `runner_manager`, Buildkite's `agent` …).
    RunningOn(Value),
    /// 404 with the vendor's error body.
    NotFound,
    /// 500.
    ServerError,
    /// Sleeps this long, then answers the vendor's running status.
    Slow(Duration),
    /// 429 with the vendor's rate-limit headers saying nothing is left: GitHub and GitLab also
    /// send `Retry-After`; Buildkite documents none, only `RateLimit-Reset` (seconds from now).
    TooManyRequests { retry_after_seconds: u64 },
    /// 200 with the running fixture, but the rate-limit headers say 0 remaining until the reset.
    Exhausted { reset_in_seconds: u64 },
    /// 200 with JSON whose status field is a number (`"status": 7`, Buildkite `"state": 7`).
    Malformed,
    /// 200 with a valid-looking running answer of about [`OVERSIZED_BYTES`].
    Oversized,
}

/// Roughly the size of a [`JobAnswer::Oversized`] body.
pub const OVERSIZED_BYTES: usize = 4 * 1024 * 1024;

/// The GitLab project the jobs live in (`pipeline.project_id` of gitlab-api-job-running.json and
/// `job_project_id` / `job_project_path` of gitlab-token-claims.json).
pub const GITLAB_PROJECT_ID: u64 = 20;
pub const GITLAB_PROJECT_PATH: &str = "my-group/my-project";
/// Requests per minute (GitLab.com's authenticated API limit).
pub const GITLAB_RATE_LIMIT: u64 = 2000;

/// Where the Buildkite jobs live (`build_url` of buildkite-api-job.json, and the token's
/// `organization_slug`, `pipeline_slug`, `build_number`).
pub const BUILDKITE_ORGANIZATION: &str = "acme-inc";
pub const BUILDKITE_PIPELINE: &str = "super-duper-app";
pub const BUILDKITE_BUILD: u64 = 1;
/// Requests per minute per organization, as Buildkite documents.
pub const BUILDKITE_RATE_LIMIT: u64 = 200;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Gitlab,
    Buildkite,
}

#[derive(Default)]
struct Shared {
    jobs: HashMap<String, JobAnswer>,
    /// Buildkite agents by id: their `meta_data` (tags).
    agents: HashMap<String, Vec<String>>,
    calls: HashMap<String, usize>,
    requests: Vec<String>,
    /// The current one-minute rate-limit window (unix minute) and the requests seen in it.
    window: (i64, u64),
    /// GitLab's `expires_at` of the server's token (`2024-12-31`), as `personal_access_tokens/self` tells it.
    token_expires: Option<String>,
}

#[derive(Clone)]
struct ApiState {
    vendor: Vendor,
    token: Arc<str>,
    shared: Arc<Mutex<Shared>>,
}

/// A CI's job API on loopback.
pub struct CiApi {
    /// The API root as the broker is configured with it: GitLab `http://127.0.0.1:PORT/api/v4`,
    /// Buildkite `http://127.0.0.1:PORT` (its paths start with `/v2`).
    pub url: String,
    /// The only credential the API accepts (GitLab `PRIVATE-TOKEN`, Buildkite bearer).
    pub token: String,
    pub vendor: Vendor,
    shared: Arc<Mutex<Shared>>,
}

impl CiApi {
    /// `GET /api/v4/projects/{id}/jobs/{job_id}`, `{id}` the project's id or its URL-encoded
    /// path. Authenticated with `PRIVATE-TOKEN: <token>` (or `Authorization: Bearer <token>`,
    /// which GitLab accepts for the same tokens); else 401 `{"message":"401 Unauthorized"}`.
    pub async fn gitlab() -> Self {
        let token = format!("glpat-{}", &random_hex()[..20]);
        let router = Router::new()
            .route("/api/v4/projects/{id}/jobs/{job_id}", get(gitlab_job))
            .route("/api/v4/personal_access_tokens/self", get(gitlab_token_self));
        Self::start(Vendor::Gitlab, token, router, "/api/v4").await
    }

    /// `GET /v2/organizations/{org}/pipelines/{pipeline}/builds/{number}/jobs/{job_id}` and
    /// `GET /v2/organizations/{org}/jobs/{job_id}`, with `Authorization: Bearer <token>`; else
    /// 401 `{"message":"Authentication required. ..."}`.
    pub async fn buildkite() -> Self {
        let token = format!("bkua_{}", &random_hex()[..40]);
        let router = Router::new()
            .route(
                "/v2/organizations/{org}/pipelines/{pipeline}/builds/{number}/jobs/{job_id}",
                get(buildkite_build_job),
            )
            .route("/v2/organizations/{org}/jobs/{job_id}", get(buildkite_job))
            .route("/v2/organizations/{org}/agents/{agent_id}", get(buildkite_agent))
            .route("/v2/access-token", get(buildkite_access_token));
        Self::start(Vendor::Buildkite, token, router, "").await
    }

    async fn start(vendor: Vendor, token: String, router: Router<ApiState>, root: &str) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let state = ApiState { vendor, token: token.as_str().into(), shared: shared.clone() };
        let router = router
            .fallback(unknown_route)
            .layer(middleware::from_fn_with_state(state.clone(), track))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let url = format!("http://{}{root}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, token, vendor, shared }
    }

    /// How the status call for `job_id` is answered from now on; a job never set is not found.
    /// A Buildkite agent `GET /v2/organizations/{org}/agents/{id}` describes, with these tags.
    /// The date GitLab's `personal_access_tokens/self` says the token expires on (`2024-12-31`).
    pub fn set_token_expiry(&self, date: &str) {
        self.shared.lock().unwrap().token_expires = Some(date.to_owned());
    }

    pub fn set_agent(&self, agent_id: &str, meta_data: &[&str]) {
        let tags = meta_data.iter().map(|tag| (*tag).to_owned()).collect();
        self.shared.lock().unwrap().agents.insert(agent_id.to_owned(), tags);
    }

    /// How many agent calls named `agent_id`.
    pub fn agent_calls(&self, agent_id: &str) -> usize {
        let path = format!("/v2/organizations/{BUILDKITE_ORGANIZATION}/agents/{agent_id}");
        self.shared.lock().unwrap().requests.iter().filter(|request| **request == path).count()
    }

    pub fn set_job(&self, job_id: &str, answer: JobAnswer) {
        self.shared.lock().unwrap().jobs.insert(job_id.to_owned(), answer);
    }

    /// How many status calls named `job_id`, whatever they were answered (401s included).
    pub fn calls(&self, job_id: &str) -> usize {
        self.shared.lock().unwrap().calls.get(job_id).copied().unwrap_or(0)
    }

    /// The path and query of every request received, in order, as sent (GitLab's with their
    /// `/api/v4` prefix).
    pub fn requests(&self) -> Vec<String> {
        self.shared.lock().unwrap().requests.clone()
    }
}

fn random_hex() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// An HTTP date (RFC 9110 IMF-fixdate), as GitLab's `RateLimit-ResetTime`.
fn http_date(unix: i64) -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::from_unix_timestamp(unix).expect("a time").format(&format).expect("formats")
}

/// What the rate limit says about one answer.
struct Window {
    observed: u64,
    remaining: u64,
    /// Unix seconds.
    reset: i64,
}

impl Vendor {
    fn limit(self) -> u64 {
        match self {
            Vendor::Gitlab => GITLAB_RATE_LIMIT,
            Vendor::Buildkite => BUILDKITE_RATE_LIMIT,
        }
    }

    /// A job still running: GitLab `status` and Buildkite `state` alike.
    fn running(self) -> &'static str {
        "running"
    }

    fn exhausted(self, reset_in_seconds: u64) -> Window {
        Window { observed: self.limit(), remaining: 0, reset: now() + reset_in_seconds as i64 }
    }

    /// The vendor's rate-limit headers. Buildkite's `RateLimit-Reset` is seconds from now,
    /// GitLab's is unix seconds (with the same instant as an HTTP date in `RateLimit-ResetTime`).
    fn rate_headers(self, window: &Window) -> Vec<(HeaderName, String)> {
        let name = HeaderName::from_static;
        match self {
            Vendor::Gitlab => vec![
                (name("ratelimit-limit"), GITLAB_RATE_LIMIT.to_string()),
                (name("ratelimit-observed"), window.observed.to_string()),
                (name("ratelimit-remaining"), window.remaining.to_string()),
                (name("ratelimit-reset"), window.reset.to_string()),
                (name("ratelimit-resettime"), http_date(window.reset)),
            ],
            Vendor::Buildkite => vec![
                (name("ratelimit-remaining"), window.remaining.to_string()),
                (name("ratelimit-limit"), BUILDKITE_RATE_LIMIT.to_string()),
                (name("ratelimit-reset"), (window.reset - now()).max(0).to_string()),
            ],
        }
    }

    fn message(self, status: StatusCode) -> Response {
        let message = match (self, status.as_u16()) {
            (Vendor::Gitlab, 401) => "401 Unauthorized",
            (Vendor::Gitlab, 404) => "404 Not found",
            (Vendor::Gitlab, _) => "500 Internal Server Error",
            (Vendor::Buildkite, 401) => {
                "Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication"
            }
            (Vendor::Buildkite, 404) => "Not Found",
            (Vendor::Buildkite, _) => "Internal Server Error",
        };
        (status, Json(json!({ "message": message }))).into_response()
    }

    fn authorized(self, token: &str, headers: &HeaderMap) -> bool {
        let value = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
        let bearer = value(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer "));
        match self {
            Vendor::Gitlab => value(HeaderName::from_static("private-token")) == Some(token) || bearer == Some(token),
            Vendor::Buildkite => bearer == Some(token),
        }
    }

    /// The fixture of a job in `status`, `id` set to `job_id`.
    fn body(self, status: &str, job_id: &str) -> Value {
        match self {
            Vendor::Gitlab => gitlab_body(status, job_id),
            Vendor::Buildkite => buildkite_body(status, job_id),
        }
    }

    fn status_field(self) -> &'static str {
        match self {
            Vendor::Gitlab => "status",
            Vendor::Buildkite => "state",
        }
    }
}

/// Records every request, counts it against the rate-limit window and puts the vendor's
/// rate-limit headers on every answer that does not carry its own.
async fn track(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let window = {
        let mut shared = state.shared.lock().unwrap();
        let target = request.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
        shared.requests.push(target);
        let minute = now().div_euclid(60);
        if shared.window.0 != minute {
            shared.window = (minute, 0);
        }
        shared.window.1 += 1;
        let observed = shared.window.1.min(state.vendor.limit() - 1);
        Window { observed, remaining: state.vendor.limit() - observed, reset: (minute + 1) * 60 }
    };
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if !headers.contains_key("ratelimit-remaining") {
        for (name, value) in state.vendor.rate_headers(&window) {
            headers.insert(name, HeaderValue::from_str(&value).expect("a header value"));
        }
    }
    response
}

/// `GET /api/v4/personal_access_tokens/self`, as GitLab documents it for the token of the call.
async fn gitlab_token_self(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    if !state.vendor.authorized(&state.token, &headers) {
        return state.vendor.message(StatusCode::UNAUTHORIZED);
    }
    let expires_at = state.shared.lock().unwrap().token_expires.clone();
    Json(json!({
        "id": 4, "name": "ci-creds", "revoked": false, "created_at": "2026-01-02T03:04:05.000Z",
        "scopes": ["read_api"], "user_id": 24, "last_used_at": null, "active": true, "expires_at": expires_at,
    }))
    .into_response()
}

/// `GET /v2/access-token`, as Buildkite documents it for the token of the call.
async fn buildkite_access_token(State(state): State<ApiState>, headers: HeaderMap) -> Response {
    if !state.vendor.authorized(&state.token, &headers) {
        return state.vendor.message(StatusCode::UNAUTHORIZED);
    }
    Json(json!({ "uuid": "b63254c0-3271-4a98-8270-7cfbd6c2f14e", "scopes": ["read_builds", "read_agents"] }))
        .into_response()
}

async fn unknown_route(State(state): State<ApiState>) -> Response {
    match state.vendor {
        Vendor::Gitlab => (StatusCode::NOT_FOUND, Json(json!({ "error": "404 Not Found" }))).into_response(),
        Vendor::Buildkite => state.vendor.message(StatusCode::NOT_FOUND),
    }
}

async fn gitlab_job(
    State(state): State<ApiState>,
    Path((project, job_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let in_project = project == GITLAB_PROJECT_ID.to_string() || project == GITLAB_PROJECT_PATH;
    status_call(&state, &job_id, &headers, in_project).await
}

async fn buildkite_build_job(
    State(state): State<ApiState>,
    Path((org, pipeline, number, job_id)): Path<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let in_build =
        org == BUILDKITE_ORGANIZATION && pipeline == BUILDKITE_PIPELINE && number == BUILDKITE_BUILD.to_string();
    status_call(&state, &job_id, &headers, in_build).await
}

async fn buildkite_job(
    State(state): State<ApiState>,
    Path((org, job_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    status_call(&state, &job_id, &headers, org == BUILDKITE_ORGANIZATION).await
}

/// `GET /v2/organizations/{org}/agents/{id}`: the Agent object as Buildkite's REST API documents
/// it, `meta_data` holding the agent's tags.
async fn buildkite_agent(
    State(state): State<ApiState>,
    Path((org, agent_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !state.vendor.authorized(&state.token, &headers) {
        return state.vendor.message(StatusCode::UNAUTHORIZED);
    }
    let tags = state.shared.lock().unwrap().agents.get(&agent_id).cloned();
    let (true, Some(tags)) = (org == BUILDKITE_ORGANIZATION, tags) else {
        return state.vendor.message(StatusCode::NOT_FOUND);
    };
    let url = format!("https://api.buildkite.com/v2/organizations/{org}/agents/{agent_id}");
    Json(json!({
        "id": agent_id, "graphql_id": "QWdlbnQtLS0=", "url": url,
        "web_url": format!("https://buildkite.com/organizations/{org}/agents/{agent_id}"),
        "name": "acme-inc-linux-1", "connection_state": "connected", "hostname": "ip-10-0-12-34",
        "ip_address": "203.0.113.10", "user_agent": "buildkite-agent/3.87.0 (linux; amd64)",
        "version": "3.87.0", "creator": null, "created_at": "2015-05-09T21:05:30.000Z", "job": null,
        "last_job_finished_at": null, "priority": 0, "meta_data": tags
    }))
    .into_response()
}

/// One status call: counted, authenticated, then answered as set for the job. `located` is
/// whether the path names the project / organization / build the jobs live in.
async fn status_call(state: &ApiState, job_id: &str, headers: &HeaderMap, located: bool) -> Response {
    let vendor = state.vendor;
    let answer = {
        let mut shared = state.shared.lock().unwrap();
        *shared.calls.entry(job_id.to_owned()).or_default() += 1;
        shared.jobs.get(job_id).cloned().unwrap_or(JobAnswer::NotFound)
    };
    if !vendor.authorized(&state.token, headers) {
        return vendor.message(StatusCode::UNAUTHORIZED);
    }
    if !located {
        return match vendor {
            Vendor::Gitlab => {
                (StatusCode::NOT_FOUND, Json(json!({ "message": "404 Project Not Found" }))).into_response()
            }
            Vendor::Buildkite => vendor.message(StatusCode::NOT_FOUND),
        };
    }
    match answer {
        JobAnswer::Status(status) => Json(vendor.body(status, job_id)).into_response(),
        JobAnswer::RunningOn(fields) => {
            Json(with_fields(vendor.body(vendor.running(), job_id), fields)).into_response()
        }
        JobAnswer::NotFound => vendor.message(StatusCode::NOT_FOUND),
        JobAnswer::ServerError => vendor.message(StatusCode::INTERNAL_SERVER_ERROR),
        JobAnswer::Slow(delay) => {
            tokio::time::sleep(delay).await;
            Json(vendor.body(vendor.running(), job_id)).into_response()
        }
        JobAnswer::TooManyRequests { retry_after_seconds } => {
            let mut headers = vendor.rate_headers(&vendor.exhausted(retry_after_seconds));
            match vendor {
                // Rack::Attack's throttle answer: plain text.
                Vendor::Gitlab => {
                    headers.push((header::RETRY_AFTER, retry_after_seconds.to_string()));
                    headers.push((header::CONTENT_TYPE, "text/plain".to_owned()));
                    (StatusCode::TOO_MANY_REQUESTS, with_headers(headers), "Retry later\n").into_response()
                }
                Vendor::Buildkite => {
                    let body = json!({ "message": "You have exceeded your rate limit. Please wait before making more requests." });
                    (StatusCode::TOO_MANY_REQUESTS, with_headers(headers), Json(body)).into_response()
                }
            }
        }
        JobAnswer::Exhausted { reset_in_seconds } => {
            let headers = vendor.rate_headers(&vendor.exhausted(reset_in_seconds));
            (with_headers(headers), Json(vendor.body(vendor.running(), job_id))).into_response()
        }
        JobAnswer::Malformed => {
            let mut body = vendor.body(vendor.running(), job_id);
            body[vendor.status_field()] = json!(7);
            Json(body).into_response()
        }
        JobAnswer::Oversized => Json(oversized(vendor, job_id)).into_response(),
    }
}

fn with_headers(headers: Vec<(HeaderName, String)>) -> HeaderMap {
    headers.into_iter().map(|(name, value)| (name, HeaderValue::from_str(&value).expect("a header value"))).collect()
}

/// `job_id` as the fixture's id type: a number where the vendor's ids are (GitHub, GitLab).
pub(super) fn id_value(job_id: &str, numeric: bool) -> Value {
    match job_id.parse::<u64>() {
        Ok(id) if numeric => json!(id),
        _ => json!(job_id),
    }
}

/// Sets `id` to `job_id`, and the fixture's own id in every top-level `*_url` field.
/// `body` with each of `fields`' top-level members set over it.
pub(super) fn with_fields(mut body: Value, fields: Value) -> Value {
    if let (Value::Object(body), Value::Object(fields)) = (&mut body, fields) {
        body.extend(fields);
    }
    body
}

pub(super) fn set_job_id(body: &mut Value, job_id: &str, numeric: bool) {
    let old = match &body["id"] {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    };
    body["id"] = id_value(job_id, numeric);
    if let Value::Object(fields) = body {
        for (name, value) in fields.iter_mut() {
            if let Value::String(url) = value
                && name.ends_with("url")
            {
                *url = url.replace(&old, job_id);
            }
        }
    }
}

fn gitlab_body(status: &str, job_id: &str) -> Value {
    let finished = matches!(status, "success" | "failed" | "canceled" | "skipped");
    let mut body = fixture(if finished { "gitlab-api-job-success.json" } else { "gitlab-api-job-running.json" });
    body["status"] = json!(status);
    match status {
        "failed" => {
            body["failure_reason"] = json!("script_failure");
            body["pipeline"]["status"] = json!("failed");
        }
        "canceled" | "skipped" => body["pipeline"]["status"] = json!(status),
        // Not picked up by a runner yet: not started.
        "created" | "pending" | "waiting_for_resource" | "preparing" | "scheduled" | "manual" => {
            for field in ["started_at", "duration", "runner", "runner_manager"] {
                body[field] = Value::Null;
            }
            body["pipeline"]["status"] = json!("pending");
        }
        _ => {}
    }
    set_job_id(&mut body, job_id, true);
    body
}

fn buildkite_body(state: &str, job_id: &str) -> Value {
    let mut body = fixture("buildkite-api-job.json");
    body["state"] = json!(state);
    match state {
        "passed" | "failed" | "canceled" | "timed_out" | "broken" | "expired" | "skipped" => {
            body["finished_at"] = json!("2015-05-09T21:10:05.000Z");
            body["exit_status"] = match state {
                "passed" => json!(0),
                "failed" => json!(1),
                _ => Value::Null,
            };
        }
        // Not on an agent yet.
        "pending" | "waiting" | "waiting_failed" | "blocked" | "blocked_failed" | "unblocked" | "unblocked_failed"
        | "limiting" | "limited" | "scheduled" => {
            body["started_at"] = Value::Null;
            body["agent"] = Value::Null;
        }
        _ => {}
    }
    set_job_id(&mut body, job_id, false);
    body
}

fn oversized(vendor: Vendor, job_id: &str) -> Value {
    let mut body = vendor.body(vendor.running(), job_id);
    match vendor {
        Vendor::Gitlab => {
            let line = "Deploy feature-branch-1 to test\n";
            body["commit"]["message"] = json!(line.repeat(OVERSIZED_BYTES / line.len()));
        }
        Vendor::Buildkite => {
            let command = "scripts/build.sh && ";
            body["command"] = json!(command.repeat(OVERSIZED_BYTES / command.len()));
        }
    }
    body
}
