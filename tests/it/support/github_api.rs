//! GitHub's App API as GitHub documents it, on loopback: the App JWT checked against the App's
//! public key (signature, `iss`, lifetime), installations per account, installation tokens
//! issued with their scope and kept, `DELETE /installation/token`, and one endpoint that answers
//! only live tokens. It records every request so tests can assert what the broker asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use ci_creds::dev::SigningKey;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

pub const APP_ID: &str = "312345";
pub const INSTALLATION_ID: u64 = 52213407;
pub const OWNER: &str = "octo-org";
/// The repositories the installation can reach, by name and id.
pub const REPOSITORIES: [(&str, u64); 3] = [("octo-repo", 74), ("app", 1296269), ("infra", 1296270)];

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

#[derive(Default)]
struct Shared {
    requests: Vec<(String, String)>,
    issued: Vec<Issued>,
    mode: Option<Mode>,
    serial: u64,
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
        let shared = Arc::new(Mutex::new(Shared::default()));
        let state = AppState { shared: shared.clone(), public_key: Arc::new(public_key) };
        let router = Router::new()
            .route("/app", get(app))
            .route("/orgs/{owner}/installation", get(installation))
            .route("/users/{owner}/installation", get(user_installation))
            .route("/app/installations/{id}/access_tokens", post(access_token))
            .route("/installation/token", delete(revoke))
            .route("/installation/repositories", get(repositories))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, private_key_pem: key.pkcs8_pem().to_owned(), shared }
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
}

fn record(state: &AppState, method: &str, path: String) -> Option<Response> {
    let mut shared = state.shared.lock().unwrap();
    shared.requests.push((method.to_owned(), path));
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
    let names: Vec<&str> = match (&request["repositories"], &request["repository_ids"]) {
        (Value::Array(names), _) => names.iter().filter_map(Value::as_str).collect(),
        (_, Value::Array(ids)) => ids
            .iter()
            .filter_map(|id| {
                REPOSITORIES.iter().find(|(_, known)| Some(*known) == id.as_u64()).map(|(n, _)| *n).or(Some("?"))
            })
            .collect(),
        _ => REPOSITORIES.iter().map(|(name, _)| *name).collect(),
    };
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
    let expires_at = (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let repositories: Vec<Value> = names
        .iter()
        .map(|name| json!({ "id": by_name[name], "name": name, "full_name": format!("{OWNER}/{name}"), "private": true }))
        .collect();
    (
        StatusCode::CREATED,
        Json(json!({ "token": token, "expires_at": expires_at, "permissions": request["permissions"],
        "repository_selection": "selected", "repositories": repositories })),
    )
        .into_response()
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
