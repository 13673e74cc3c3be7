//! GitHub's App API as GitHub documents it, on loopback: the App JWT checked against the App's
//! public key (signature, `iss`, lifetime), installations per account, installation tokens
//! issued with their scope and kept, `DELETE /installation/token`, and one endpoint that answers
//! only live tokens. It records every request so tests can assert what the broker asked.
//!
//! The jobs API: `GET /repos/{owner}/{repo}/installation` (App JWT) and
//! `GET /repos/{owner}/{repo}/actions/jobs/{job_id}` (an installation token with `actions: read`
//! whose repositories include the repository), answered per job as set with `set_job`. Jobs live
//! in [`JOB_REPOSITORY`], as the fixtures' URLs say. Every answer carries GitHub's `x-ratelimit-*`
//! headers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use ci_creds::dev::SigningKey;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

use super::ci_api::{JobAnswer, OVERSIZED_BYTES, set_job_id, with_fields};

pub const APP_ID: &str = "312345";
pub const INSTALLATION_ID: u64 = 52213407;
pub const OWNER: &str = "octo-org";
/// The repositories the installation can reach, by name and id.
pub const REPOSITORIES: [(&str, u64); 3] = [("octo-repo", 74), ("app", 1296269), ("infra", 1296270)];
/// The repository the workflow jobs run in (`repository` of github-token-claims.json, the URLs of
/// github-api-job-*.json).
pub const JOB_REPOSITORY: &str = "octo-repo";
/// The `core` rate limit of an installation, per hour.
pub const RATE_LIMIT: u64 = 5000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Answer,
    /// 403 with `x-ratelimit-remaining: 0` and a reset 120 s ahead.
    RateLimited,
    /// 503 to everything.
    Down,
}

#[derive(Clone, Debug)]
pub struct Issued {
    pub token: String,
    /// The body the broker sent to `POST /app/installations/{id}/access_tokens`.
    pub request: Value,
    pub alive: bool,
}

/// What an issued token may do, as GitHub scoped it.
struct TokenScope {
    permissions: serde_json::Map<String, Value>,
    /// `None`: every repository of the installation.
    repositories: Option<Vec<String>>,
}

#[derive(Default)]
struct Shared {
    requests: Vec<(String, String)>,
    /// Every request's path exactly as sent, before any decoding.
    raw_paths: Vec<String>,
    issued: Vec<Issued>,
    mode: Option<Mode>,
    serial: u64,
    scopes: HashMap<String, TokenScope>,
    jobs: HashMap<String, JobAnswer>,
    job_calls: HashMap<String, usize>,
    /// Requests counted against the `core` limit, and when it resets (unix seconds).
    used: u64,
    reset: i64,
    /// How long an installation token lives, where not GitHub's hour.
    token_lifetime: Option<time::Duration>,
    /// A personal access token `GET /rate_limit` takes, and the expiry header it answers with.
    personal_token: Option<(String, Option<String>)>,
}

pub struct GithubApi {
    pub url: String,
    /// The App's private key (PKCS#8 PEM), for the broker's environment.
    pub private_key_pem: String,
    shared: Arc<Mutex<Shared>>,
}

#[derive(Clone)]
struct AppState {
    shared: Arc<Mutex<Shared>>,
    public_key: Arc<DecodingKey>,
}

impl GithubApi {
    pub async fn start() -> Self {
        let key = SigningKey::generate_rs256().expect("RSA key");
        let public_key = DecodingKey::from_jwk(&serde_json::from_value(key.jwk().clone()).expect("JWK")).expect("key");
        let reset = time::OffsetDateTime::now_utc().unix_timestamp() + 3600;
        let shared = Arc::new(Mutex::new(Shared { reset, ..Shared::default() }));
        let state = AppState { shared: shared.clone(), public_key: Arc::new(public_key) };
        let router = Router::new()
            .route("/app", get(app))
            .route("/app/installations", get(installations))
            .route("/rate_limit", get(rate_limit))
            .route("/orgs/{owner}/installation", get(installation))
            .route("/users/{owner}/installation", get(user_installation))
            .route("/app/installations/{id}/access_tokens", post(access_token))
            .route("/installation/token", delete(revoke))
            .route("/installation/repositories", get(repositories))
            .route("/repos/{owner}/{repo}/installation", get(repository_installation))
            .route("/repos/{owner}/{repo}/actions/jobs/{job_id}", get(job))
            .layer(axum::middleware::map_response_with_state(state.clone(), rate_limit_headers))
            .layer(axum::middleware::map_request_with_state(state.clone(), record_raw_path))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, private_key_pem: key.pkcs8_pem().to_owned(), shared }
    }

    /// Installation tokens issued from now on expire `lifetime` after issue, not after GitHub's hour.
    pub fn set_token_lifetime(&self, lifetime: std::time::Duration) {
        self.shared.lock().unwrap().token_lifetime = Some(time::Duration::seconds(lifetime.as_secs() as i64));
    }

    /// A personal access token `GET /rate_limit` takes from now on, answered with GitHub's
    /// `github-authentication-token-expiration` header (`2021-10-07 19:07:53 UTC`) when `expires`
    /// is given; any other token is answered 401 "Bad credentials".
    pub fn set_personal_token(&self, token: &str, expires: Option<String>) {
        self.shared.lock().unwrap().personal_token = Some((token.to_owned(), expires));
    }

    pub fn set(&self, mode: Mode) {
        self.shared.lock().unwrap().mode = Some(mode);
    }

    /// Every token issued, in order, with the scope it was asked for and whether it still works.
    pub fn issued(&self) -> Vec<Issued> {
        self.shared.lock().unwrap().issued.clone()
    }

    /// `METHOD /path` of every request received, in order.
    pub fn requests(&self) -> Vec<(String, String)> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// The path of every request received, in order, exactly as the broker wrote it.
    pub fn raw_paths(&self) -> Vec<String> {
        self.shared.lock().unwrap().raw_paths.clone()
    }

    /// How `GET /repos/{owner}/{repo}/actions/jobs/{job_id}` answers from now on, once the token
    /// is accepted; a job never set is not found.
    pub fn set_job(&self, job_id: &str, answer: JobAnswer) {
        self.shared.lock().unwrap().jobs.insert(job_id.to_owned(), answer);
    }

    /// How many job calls named `job_id`, whatever they were answered (refusals included).
    pub fn job_calls(&self, job_id: &str) -> usize {
        self.shared.lock().unwrap().job_calls.get(job_id).copied().unwrap_or(0)
    }
}

async fn record_raw_path(State(state): State<AppState>, request: axum::extract::Request) -> axum::extract::Request {
    state.shared.lock().unwrap().raw_paths.push(request.uri().path().to_owned());
    request
}

fn record(state: &AppState, method: &str, path: String) -> Option<Response> {
    let mut shared = state.shared.lock().unwrap();
    shared.requests.push((method.to_owned(), path));
    shared.used += 1;
    match shared.mode.unwrap_or(Mode::Answer) {
        Mode::Answer => None,
        Mode::Down => {
            Some((StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "message": "Service unavailable" }))).into_response())
        }
        Mode::RateLimited => {
            let reset = time::OffsetDateTime::now_utc().unix_timestamp() + 120;
            let headers = [("x-ratelimit-remaining", "0".to_owned()), ("x-ratelimit-reset", reset.to_string())];
            let body = json!({ "message": "API rate limit exceeded for installation ID 52213407.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api" });
            Some((StatusCode::FORBIDDEN, headers, Json(body)).into_response())
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ")
}

/// GitHub's checks of an App JWT: RS256 by the App's key, `iss` the App id, `exp` at most ten
/// minutes after `iat` and not past. `Some` is the refusal.
fn app_refusal(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    app_authenticated(state, headers).err().map(|refusal| *refusal)
}

fn app_authenticated(state: &AppState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    let unauthorized =
        |message: &str| Box::new((StatusCode::UNAUTHORIZED, Json(json!({ "message": message }))).into_response());
    let token = bearer(headers).ok_or_else(|| unauthorized("A JSON web token could not be decoded"))?;
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[APP_ID]);
    validation.set_required_spec_claims(&["exp", "iat", "iss"]);
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<Value>(token, &state.public_key, &validation)
        .map_err(|_| unauthorized("A JSON web token could not be decoded"))?
        .claims;
    let (iat, exp) = (claims["iat"].as_i64().unwrap_or(0), claims["exp"].as_i64().unwrap_or(0));
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if exp - iat > 600 || exp > now + 600 || iat > now + 60 {
        return Err(unauthorized("'Expiration time' claim ('exp') is too far in the future"));
    }
    Ok(())
}

async fn app(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "GET", "/app".into()) {
        return answer;
    }
    if let Some(refused) = app_refusal(&state, &headers) {
        return refused;
    }
    Json(json!({ "id": APP_ID.parse::<u64>().unwrap(), "slug": "ci-creds-test", "name": "ci-creds test" }))
        .into_response()
}

/// `GET /app/installations`: the App's one installation, on [`OWNER`].
async fn installations(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "GET", "/app/installations".into()) {
        return answer;
    }
    if let Some(refused) = app_refusal(&state, &headers) {
        return refused;
    }
    Json(
        json!([{ "id": INSTALLATION_ID, "account": { "login": OWNER, "type": "Organization" }, "suspended_at": null }]),
    )
    .into_response()
}

/// `GET /rate_limit` with the personal access token set by `set_personal_token`.
async fn rate_limit(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "GET", "/rate_limit".into()) {
        return answer;
    }
    let personal_token = state.shared.lock().unwrap().personal_token.clone();
    match personal_token {
        Some((token, expires)) if bearer(&headers) == Some(token.as_str()) => {
            let limit = json!({ "limit": RATE_LIMIT, "used": 0, "remaining": RATE_LIMIT, "reset": 1_900_000_000 });
            let body = Json(json!({ "resources": { "core": limit }, "rate": limit }));
            match expires {
                Some(expires) => ([("github-authentication-token-expiration", expires)], body).into_response(),
                None => body.into_response(),
            }
        }
        _ => (StatusCode::UNAUTHORIZED, Json(json!({ "message": "Bad credentials" }))).into_response(),
    }
}

async fn installation(State(state): State<AppState>, Path(owner): Path<String>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "GET", format!("/orgs/{owner}/installation")) {
        return answer;
    }
    if let Some(refused) = app_refusal(&state, &headers) {
        return refused;
    }
    if owner != OWNER {
        return (StatusCode::NOT_FOUND, Json(json!({ "message": "Not Found" }))).into_response();
    }
    Json(crate::support::fixture("github-api-installation.json")).into_response()
}

async fn user_installation(State(state): State<AppState>, Path(owner): Path<String>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "GET", format!("/users/{owner}/installation")) {
        return answer;
    }
    if let Some(refused) = app_refusal(&state, &headers) {
        return refused;
    }
    (StatusCode::NOT_FOUND, Json(json!({ "message": "Not Found" }))).into_response()
}

async fn access_token(State(state): State<AppState>, Path(id): Path<u64>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(answer) = record(&state, "POST", format!("/app/installations/{id}/access_tokens")) {
        return answer;
    }
    if let Some(refused) = app_refusal(&state, &headers) {
        return refused;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let by_name: HashMap<&str, u64> = REPOSITORIES.into_iter().collect();
    // Neither list, or an empty one, is the installation's every repository, as on GitHub.
    let selected: Option<Vec<&str>> = match (&request["repositories"], &request["repository_ids"]) {
        (Value::Array(names), _) if !names.is_empty() => Some(names.iter().filter_map(Value::as_str).collect()),
        (_, Value::Array(ids)) if !ids.is_empty() => Some(
            ids.iter()
                .filter_map(|id| {
                    REPOSITORIES.iter().find(|(_, known)| Some(*known) == id.as_u64()).map(|(n, _)| *n).or(Some("?"))
                })
                .collect(),
        ),
        _ => None,
    };
    let names: Vec<&str> = selected.clone().unwrap_or_else(|| REPOSITORIES.iter().map(|(name, _)| *name).collect());
    if id != INSTALLATION_ID || names.iter().any(|name| !by_name.contains_key(name)) {
        let message =
            "There is at least one repository that does not exist or is not accessible to the parent installation.";
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({ "message": message,
            "documentation_url": "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app" })))
            .into_response();
    }
    let mut shared = state.shared.lock().unwrap();
    shared.serial += 1;
    // The stateless format GitHub is rolling out is longer than the classic 40 characters.
    let token = format!("ghs_{APP_ID}_{}{:08}", uuid::Uuid::new_v4().simple(), shared.serial);
    shared.issued.push(Issued { token: token.clone(), request: request.clone(), alive: true });
    // Without `permissions`, the token has every permission of the installation.
    let permissions = match &request["permissions"] {
        Value::Object(asked) => asked.clone(),
        _ => match crate::support::fixture("github-api-installation.json")["permissions"].take() {
            Value::Object(granted) => granted,
            _ => serde_json::Map::new(),
        },
    };
    let scope = TokenScope {
        permissions: permissions.clone(),
        repositories: selected.as_ref().map(|names| names.iter().map(|name| (*name).to_owned()).collect()),
    };
    shared.scopes.insert(token.clone(), scope);
    let lifetime = shared.token_lifetime.unwrap_or(time::Duration::hours(1));
    let expires_at =
        (time::OffsetDateTime::now_utc() + lifetime).format(&time::format_description::well_known::Rfc3339).unwrap();
    let mut answer = json!({ "token": token, "expires_at": expires_at, "permissions": permissions });
    match &selected {
        Some(names) => {
            let repositories: Vec<Value> = names
                .iter()
                .map(|name| {
                    json!({ "id": by_name[name], "name": name, "full_name": format!("{OWNER}/{name}"), "private": true })
                })
                .collect();
            answer["repository_selection"] = json!("selected");
            answer["repositories"] = json!(repositories);
        }
        // The installation's own selection; GitHub lists no repositories then.
        None => answer["repository_selection"] = json!("all"),
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

async fn revoke(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "DELETE", "/installation/token".into()) {
        return answer;
    }
    let mut shared = state.shared.lock().unwrap();
    let token = bearer(&headers).unwrap_or_default().to_owned();
    match shared.issued.iter_mut().find(|issued| issued.token == token && issued.alive) {
        Some(issued) => {
            issued.alive = false;
            StatusCode::NO_CONTENT.into_response()
        }
        None => (StatusCode::UNAUTHORIZED, Json(json!({ "message": "Bad credentials" }))).into_response(),
    }
}

/// `GET /installation/repositories`: answers only a live installation token.
async fn repositories(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(answer) = record(&state, "GET", "/installation/repositories".into()) {
        return answer;
    }
    let shared = state.shared.lock().unwrap();
    let token = bearer(&headers).unwrap_or_default();
    if !shared.issued.iter().any(|issued| issued.token == token && issued.alive) {
        return (StatusCode::UNAUTHORIZED, Json(json!({ "message": "Bad credentials" }))).into_response();
    }
    Json(json!({ "total_count": 0, "repositories": [] })).into_response()
}

impl GithubApi {
    /// Whether GitHub would answer `token` now.
    pub async fn token_works(&self, token: &str) -> bool {
        let response = reqwest::Client::new()
            .get(format!("{}/installation/repositories", self.url))
            .bearer_auth(token)
            .send()
            .await
            .expect("the stand-in answers");
        response.status() == 200
    }
}

fn not_found(documentation: &str) -> Response {
    let body = json!({ "message": "Not Found", "documentation_url": documentation, "status": "404" });
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

const INSTALLATION_DOCS: &str =
    "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app";
const JOB_DOCS: &str = "https://docs.github.com/rest/actions/workflow-jobs#get-a-job-for-a-workflow-run";

/// `GET /repos/{owner}/{repo}/installation`: the installation, for a repository it covers.
async fn repository_installation(
    State(state): State<AppState>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(answer) = record(&state, "GET", format!("/repos/{owner}/{repo}/installation")) {
        return answer;
    }
    if let Some(refused) = app_refusal(&state, &headers) {
        return refused;
    }
    // Owner and repository names are case-insensitive on GitHub.
    let covered =
        owner.eq_ignore_ascii_case(OWNER) && REPOSITORIES.iter().any(|(name, _)| name.eq_ignore_ascii_case(&repo));
    if !covered {
        return not_found(INSTALLATION_DOCS);
    }
    Json(crate::support::fixture("github-api-installation.json")).into_response()
}

/// `GET /repos/{owner}/{repo}/actions/jobs/{job_id}`: a live installation token that can see the
/// repository (else 404, as GitHub answers for a private repository out of reach) and has
/// `actions` read or write (else 403); then the job as set.
async fn job(
    State(state): State<AppState>,
    Path((owner, repo, job_id)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    *state.shared.lock().unwrap().job_calls.entry(job_id.clone()).or_default() += 1;
    if let Some(answer) = record(&state, "GET", format!("/repos/{owner}/{repo}/actions/jobs/{job_id}")) {
        return answer;
    }
    let answer = {
        let shared = state.shared.lock().unwrap();
        let token = bearer(&headers).unwrap_or_default();
        let scope = shared
            .issued
            .iter()
            .any(|issued| issued.token == token && issued.alive)
            .then(|| shared.scopes.get(token))
            .flatten();
        let Some(scope) = scope else {
            let body = json!({ "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401" });
            return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
        };
        let visible = owner.eq_ignore_ascii_case(OWNER)
            && REPOSITORIES.iter().any(|(name, _)| name.eq_ignore_ascii_case(&repo))
            && scope
                .repositories
                .as_ref()
                .is_none_or(|names| names.iter().any(|name| name.eq_ignore_ascii_case(&repo)));
        if !visible {
            return not_found(JOB_DOCS);
        }
        if !matches!(scope.permissions.get("actions").and_then(Value::as_str), Some("read" | "write")) {
            let body = json!({ "message": "Resource not accessible by integration", "documentation_url": JOB_DOCS,
                "status": "403" });
            return (StatusCode::FORBIDDEN, Json(body)).into_response();
        }
        if !repo.eq_ignore_ascii_case(JOB_REPOSITORY) {
            return not_found(JOB_DOCS);
        }
        shared.jobs.get(&job_id).cloned().unwrap_or(JobAnswer::NotFound)
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    match answer {
        JobAnswer::Status(status) => Json(job_body(status, &job_id)).into_response(),
        JobAnswer::RunningOn(fields) => Json(with_fields(job_body("in_progress", &job_id), fields)).into_response(),
        JobAnswer::NotFound => not_found(JOB_DOCS),
        JobAnswer::ServerError => {
            (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "message": "Server Error" }))).into_response()
        }
        JobAnswer::Slow(delay) => {
            tokio::time::sleep(delay).await;
            Json(job_body("in_progress", &job_id)).into_response()
        }
        JobAnswer::TooManyRequests { retry_after_seconds } => {
            let body = json!({ "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                "documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits",
                "status": "429" });
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", retry_after_seconds.to_string())], Json(body))
                .into_response()
        }
        JobAnswer::Exhausted { reset_in_seconds } => {
            let headers = [
                ("x-ratelimit-remaining", "0".to_owned()),
                ("x-ratelimit-used", RATE_LIMIT.to_string()),
                ("x-ratelimit-reset", (now + reset_in_seconds as i64).to_string()),
            ];
            (headers, Json(job_body("in_progress", &job_id))).into_response()
        }
        JobAnswer::Malformed => {
            let mut body = job_body("in_progress", &job_id);
            body["status"] = json!(7);
            Json(body).into_response()
        }
        JobAnswer::Oversized => {
            // A job of many steps: each as GitHub lists them, about 200 bytes.
            let mut body = job_body("in_progress", &job_id);
            let step = body["steps"][0].clone();
            let steps: Vec<Value> = (1..=OVERSIZED_BYTES / 160)
                .map(|number| {
                    let mut step = step.clone();
                    step["number"] = json!(number);
                    step
                })
                .collect();
            body["steps"] = json!(steps);
            Json(body).into_response()
        }
    }
}

/// The job fixture in `status`, `id` the job asked for: `completed` is github-api-job-completed.json
/// (`conclusion: success`), anything else github-api-job-in-progress.json with `conclusion: null`
/// (and, before a runner took it, no runner and no steps).
fn job_body(status: &str, job_id: &str) -> Value {
    let name = if status == "completed" { "github-api-job-completed.json" } else { "github-api-job-in-progress.json" };
    let mut body = crate::support::fixture(name);
    body["status"] = json!(status);
    if status != "completed" {
        body["conclusion"] = Value::Null;
    }
    if matches!(status, "queued" | "waiting" | "requested" | "pending") {
        for field in ["runner_id", "runner_name", "runner_group_id", "runner_group_name", "started_at"] {
            body[field] = Value::Null;
        }
        body["steps"] = json!([]);
    }
    set_job_id(&mut body, job_id, true);
    body
}

/// GitHub's `core` rate-limit headers on every answer, where the answer did not set its own.
async fn rate_limit_headers(State(state): State<AppState>, mut response: Response) -> Response {
    let (used, reset) = {
        let shared = state.shared.lock().unwrap();
        (shared.used.min(RATE_LIMIT - 1), shared.reset)
    };
    let headers = response.headers_mut();
    let remaining = match headers.get("x-ratelimit-remaining").and_then(|v| v.to_str().ok()?.parse::<u64>().ok()) {
        Some(remaining) => remaining,
        None => RATE_LIMIT - used,
    };
    let defaults = [
        ("x-ratelimit-limit", RATE_LIMIT.to_string()),
        ("x-ratelimit-remaining", remaining.to_string()),
        ("x-ratelimit-used", (RATE_LIMIT - remaining).to_string()),
        ("x-ratelimit-reset", reset.to_string()),
        ("x-ratelimit-resource", "core".to_owned()),
    ];
    for (name, value) in defaults {
        if !headers.contains_key(name) {
            headers.insert(name, HeaderValue::from_str(&value).expect("a header value"));
        }
    }
    response
}
