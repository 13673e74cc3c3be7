//! What a CI job around `ci-creds get` looks like from the outside: GitHub's token endpoint
//! (`ACTIONS_ID_TOKEN_REQUEST_URL`) signing a fresh token per request, a proxy in front of the
//! broker that can lose answers, and the binary run with a clean environment.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::Output;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use ci_creds::dev::{DevIssuer, live_claims};
use serde_json::{Value, json};

use super::fixture;

pub const REQUEST_TOKEN: &str = "actions-request-token-3f9a";

/// GitHub's job token endpoint, signing the GitHub fixture for the audience asked.
pub struct TokenEndpoint {
    pub url: String,
    state: Arc<EndpointState>,
}

struct EndpointState {
    issuer: Arc<DevIssuer>,
    edit: fn(&mut Value),
    issued: Mutex<Vec<String>>,
    audiences: Mutex<Vec<String>>,
}

impl TokenEndpoint {
    pub async fn start(issuer: Arc<DevIssuer>, edit: fn(&mut Value)) -> Self {
        let state =
            Arc::new(EndpointState { issuer, edit, issued: Mutex::new(Vec::new()), audiences: Mutex::new(Vec::new()) });
        let app = axum::Router::new().route("/idtoken", axum::routing::get(issue)).with_state(state.clone());
        let addr = serve(app).await;
        Self {
            // Like GitHub's, the URL already has a query; the client appends `&audience=`.
            url: format!("http://{addr}/idtoken?api-version=2.0"),
            state,
        }
    }

    /// Every token handed out, in order.
    pub fn issued(&self) -> Vec<String> {
        self.state.issued.lock().unwrap().clone()
    }

    pub fn audiences(&self) -> Vec<String> {
        self.state.audiences.lock().unwrap().clone()
    }

    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ACTIONS_ID_TOKEN_REQUEST_URL", self.url.clone()),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", REQUEST_TOKEN.to_owned()),
        ]
    }
}

async fn issue(
    State(state): State<Arc<EndpointState>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("bearer {REQUEST_TOKEN}"));
    if !authorized || query.get("api-version").map(String::as_str) != Some("2.0") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(audience) = query.get("audience") else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let mut claims = live_claims(&fixture("github-token-claims.json"), state.issuer.url(), audience, 300);
    (state.edit)(&mut claims);
    let token = state.issuer.sign(&claims).expect("signs");
    state.issued.lock().unwrap().push(token.clone());
    state.audiences.lock().unwrap().push(audience.clone());
    Json(json!({ "value": token })).into_response()
}

/// Forwards to the broker; for the first `lose` requests it forwards, then drops the broker's
/// answer and says 503, as a failing load balancer would after the broker did the work.
pub struct Proxy {
    pub url: String,
    state: Arc<ProxyState>,
}

struct ProxyState {
    target: String,
    lose: usize,
    seen: Mutex<usize>,
    answers: Mutex<Vec<String>>,
    http: reqwest::Client,
}

impl Proxy {
    pub async fn start(target: &str, lose: usize) -> Self {
        let state = Arc::new(ProxyState {
            target: target.to_owned(),
            lose,
            seen: Mutex::new(0),
            answers: Mutex::new(Vec::new()),
            http: reqwest::Client::new(),
        });
        let app = axum::Router::new().fallback(forward).with_state(state.clone());
        let addr = serve(app).await;
        Self { url: format!("http://{addr}"), state }
    }

    pub fn requests(&self) -> usize {
        *self.state.seen.lock().unwrap()
    }

    /// The broker's answers passed through, in order.
    pub fn answers(&self) -> Vec<String> {
        self.state.answers.lock().unwrap().clone()
    }
}

async fn forward(State(state): State<Arc<ProxyState>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let mut request = state.http.post(format!("{}{uri}", state.target)).body(body);
    for name in ["authorization", "content-type"] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.expect("broker answers");
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let seen = {
        let mut seen = state.seen.lock().unwrap();
        *seen += 1;
        *seen
    };
    if seen <= state.lose {
        let lost = json!({"error": "backend_unavailable", "message": "lost by the proxy", "request_id": "proxy"});
        return (StatusCode::SERVICE_UNAVAILABLE, Json(lost)).into_response();
    }
    state.answers.lock().unwrap().push(text.clone());
    (StatusCode::from_u16(status.as_u16()).unwrap(), [("content-type", "application/json")], text).into_response()
}

async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Runs the binary with only `env` set (and trace logging, so a leak into logs would show).
pub async fn ci_creds(args: &[&str], env: &[(&str, String)]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_ci-creds"))
        .args(args)
        .env_clear()
        .env("RUST_LOG", "trace")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .await
        .expect("binary runs")
}

/// Fails the test if stderr holds any of `secrets`.
pub fn assert_no_secret(output: &Output, secrets: &[String]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    for secret in secrets {
        assert!(!stderr.contains(secret.as_str()), "stderr leaks a secret: {stderr}");
    }
}

pub fn out(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn err(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
