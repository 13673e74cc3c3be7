//! A Jenkins controller on loopback, as the `oidc-provider` plugin, the REST API and the
//! Notification plugin show it: the issuer `<root>oidc` with its discovery document and the
//! leading-zero JWKS of `tests/fixtures/`, tokens signed with the fixtures' key, build and
//! computer answers from the fixtures (rewritten to this controller's root, trimmed to the
//! `tree` asked), and Notification deliveries. The REST API takes only HTTP Basic with its own
//! user and API token: anonymous requests get 403, wrong credentials 401, as Jenkins answers.
//! Every request is recorded with the status it got.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ci_creds::dev::SigningKey;
use jsonwebtoken::{Algorithm, Header};
use serde_json::{Value, json};

use super::{AUDIENCE, fixture};

/// The fixtures' branch job `main` of multibranch project `octo-repo` in folder `octo-org`, as a
/// path below the root (the Notification plugin's `url`).
pub const MAIN: &str = "job/octo-org/job/octo-repo/job/main/";
/// Its full name, and the job id of its build 42.
pub const FULL_NAME: &str = "octo-org/octo-repo/main";
pub const BUILD: u64 = 42;
/// The agent the fixtures' build runs on.
pub const AGENT: &str = "linux-agent-1";
/// The credential id of the plugin's signing key: the `kid` of every token.
pub const KID: &str = "ci-creds-id-token";
/// The REST API's user.
pub const API_USER: &str = "ci-creds";
/// `user:password` in the Notification plugin's endpoint URL.
pub const NOTIFICATION_CREDENTIALS: &str = "jenkins-notify:n0tify-s3cret";
/// The env vars the broker reads them from.
pub const API_TOKEN_ENV: &str = "TEST_JENKINS_API_TOKEN";
pub const NOTIFICATION_ENV: &str = "TEST_JENKINS_NOTIFICATION_CREDENTIALS";

/// What the controller knows of one build.
#[derive(Clone, Debug)]
pub enum Build {
    /// Building; its steps run on this agent's executor (`/computer` shows it), or on none yet.
    Running { agent: Option<&'static str> },
    /// Done, with this `result` (`SUCCESS`, `FAILURE`, `ABORTED` …).
    Finished(&'static str),
}

/// One request the controller received.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Path and query, as sent.
    pub target: String,
    pub status: u16,
}

#[derive(Default)]
struct Shared {
    /// What `<issuer>/jwks` serves: the fixture's, until the key is rotated.
    jwks: Option<Value>,
    /// By the job's path below the root (as in a URL: items encoded) and the build's number.
    builds: HashMap<(String, u64), Build>,
    /// The fixture whose `SCMRevisionAction` a build's answer carries, where not its job's
    /// default (`default_head`).
    heads: HashMap<(String, u64), &'static str>,
    requests: Vec<Seen>,
}

#[derive(Clone)]
struct Controller {
    root: Arc<str>,
    api_token: Arc<str>,
    shared: Arc<Mutex<Shared>>,
}

pub struct Jenkins {
    /// `http://127.0.0.1:PORT/`, with its slash, as Jenkins writes its root URL.
    pub root: String,
    /// `<root>oidc`: the tokens' `iss`.
    pub issuer: String,
    /// The API token of [`API_USER`].
    pub api_token: String,
    key: Mutex<Arc<SigningKey>>,
    shared: Arc<Mutex<Shared>>,
}

impl Jenkins {
    pub async fn start() -> Self {
        let pem = std::fs::read_to_string(fixtures_dir().join("jenkins-signing-key.pem")).expect("the fixture key");
        let key = SigningKey::from_rsa_pkcs8_pem(&pem).expect("an RSA PKCS#8 key");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let root = format!("http://{}/", listener.local_addr().expect("address"));
        let api_token = format!("11{}", uuid::Uuid::new_v4().simple());
        let shared = Arc::new(Mutex::new(Shared::default()));
        let state =
            Controller { root: root.as_str().into(), api_token: api_token.as_str().into(), shared: shared.clone() };
        let router = Router::new().fallback(answer).with_state(state);
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { issuer: format!("{root}oidc"), root, api_token, key: Mutex::new(Arc::new(key)), shared }
    }

    /// The `[[issuers]]` entry named `jenkins`, with `extra` lines (e.g. `max_token_lifetime`,
    /// or a `[issuers.claim_names]` table). It must end the broker's extra config: a following
    /// `[[issuers]]` starts the next entry.
    pub fn issuer_config(&self, extra: &str) -> String {
        format!("\n[[issuers]]\nname = \"jenkins\"\nkind = \"jenkins\"\nissuer = \"{}\"\n{extra}\n", self.issuer)
    }

    /// `[ci_api.jenkins]` on this controller, with `extra` lines.
    pub fn api_config(&self, extra: &str) -> String {
        format!(
            "\n[ci_api.jenkins]\napi_url = \"{}\"\nuser = \"{API_USER}\"\ntoken_env = \"{API_TOKEN_ENV}\"\ntimeout_seconds = 2\n{extra}\n",
            self.root.trim_end_matches('/')
        )
    }

    /// `[webhooks.jenkins]` taking the Notification plugin's credentials.
    pub fn webhook_config(&self) -> String {
        format!("\n[webhooks.jenkins]\nissuer = \"jenkins\"\ncredentials_env = \"{NOTIFICATION_ENV}\"\n")
    }

    /// The broker's environment for the API token and the Notification credentials.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![(API_TOKEN_ENV, self.api_token.clone()), (NOTIFICATION_ENV, NOTIFICATION_CREDENTIALS.to_owned())]
    }

    /// How the REST API answers for build `number` of the job at `job` (a path below the root,
    /// `job/…/`) from now on. A build never set is not found (404).
    pub fn set_build(&self, job: &str, number: u64, build: Build) {
        self.shared.lock().unwrap().builds.insert((format!("/{job}"), number), build);
    }

    /// The build's answer carries the actions (and so the `SCMRevisionAction`) of `fixture`
    /// (`jenkins-api-build-{branch,tag,change-request-fork,none}.json`), as asked with a `tree`.
    pub fn set_head(&self, job: &str, number: u64, fixture: &'static str) {
        self.shared.lock().unwrap().heads.insert((format!("/{job}"), number), fixture);
    }

    /// The build is deleted (log rotation): 404 from now on.
    pub fn delete_build(&self, job: &str, number: u64) {
        self.shared.lock().unwrap().builds.remove(&(format!("/{job}"), number));
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// How many requests had a path starting with `prefix`.
    pub fn calls(&self, prefix: &str) -> usize {
        self.requests().iter().filter(|seen| seen.target.starts_with(prefix)).count()
    }

    /// The job URL of `job`, a path below the root.
    pub fn job_url(&self, job: &str) -> String {
        format!("{}{job}", self.root)
    }

    /// jenkins-token-claims.json live on this controller for build `number` of `job`: `iss`,
    /// `aud` (an array, as the plugin writes it since 2026), `iat`, `exp` one hour on (the
    /// plugin's default), `sub` the job URL, `build_number` and `build_url`. No `jti`, no `nbf`.
    pub fn claims(&self, job: &str, number: u64) -> Value {
        let now = ci_creds::clock::now();
        let mut claims = fixture("jenkins-token-claims.json");
        let job_url = self.job_url(job);
        claims["iss"] = json!(self.issuer);
        claims["aud"] = json!([AUDIENCE]);
        claims["iat"] = json!(now);
        claims["exp"] = json!(now + 3600);
        claims["build_url"] = json!(format!("{job_url}{number}/"));
        claims["sub"] = json!(job_url);
        claims["build_number"] = json!(number);
        claims
    }

    /// A token of build `number` of `job`, its claims edited by `edit`.
    pub fn token(&self, job: &str, number: u64, edit: impl FnOnce(&mut Value)) -> String {
        let mut claims = self.claims(job, number);
        edit(&mut claims);
        self.sign(&claims)
    }

    /// Signs as the plugin does: RS256, `kid` the credential id, `typ` JWT.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(KID.to_owned());
        header.typ = Some("JWT".to_owned());
        let key = self.key.lock().unwrap().clone();
        key.sign_with_header(&header, claims).expect("signs")
    }

    /// The credential re-saved: a new key, published under the same `kid` (the credential's
    /// id) with `n` as Java writes it, and the old key gone at once, as the plugin does.
    pub fn rotate_key(&self) {
        let key = SigningKey::generate_rs256().expect("RSA key");
        let mut jwk = key.jwk().clone();
        let mut n = URL_SAFE_NO_PAD.decode(jwk["n"].as_str().unwrap()).unwrap();
        if n[0] & 0x80 != 0 {
            n.insert(0, 0);
        }
        jwk["n"] = json!(URL_SAFE_NO_PAD.encode(n));
        jwk["kid"] = json!(KID);
        self.shared.lock().unwrap().jwks = Some(json!({ "keys": [jwk] }));
        *self.key.lock().unwrap() = Arc::new(key);
    }
}

/// `token` with its payload's claims edited and its signature kept.
pub fn tampered(token: &str, edit: impl FnOnce(&mut Value)) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    edit(&mut claims);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
    format!("{}.{payload}.{}", parts[0], parts[2])
}

/// A Notification plugin delivery (jenkins-notification-completed.json) of build `number` of
/// `job` in `phase`, on the controller at `root`.
pub fn notification(root: &str, job: &str, number: u64, phase: &str) -> Vec<u8> {
    let mut delivery = fixture("jenkins-notification-completed.json");
    delivery["url"] = json!(job);
    delivery["build"]["url"] = json!(format!("{job}{number}/"));
    delivery["build"]["full_url"] = json!(format!("{root}{job}{number}/"));
    delivery["build"]["number"] = json!(number);
    delivery["build"]["phase"] = json!(phase);
    if phase == "QUEUED" || phase == "STARTED" {
        let build = delivery["build"].as_object_mut().unwrap();
        build.remove("status");
        build.remove("duration");
    }
    serde_json::to_vec(&delivery).unwrap()
}

/// The headers the plugin sends, with `credentials` (`user:password`) as HTTP Basic.
pub fn notification_headers(credentials: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("content-type", "application/json".to_owned())];
    if let Some(credentials) = credentials {
        headers.push(("authorization", format!("Basic {}", STANDARD.encode(credentials))));
    }
    headers
}

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

async fn answer(State(controller): State<Controller>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let response = respond(&controller, &path, &query, request.headers());
    let target = request.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
    controller.shared.lock().unwrap().requests.push(Seen { target, status: response.status().as_u16() });
    response
}

fn respond(controller: &Controller, path: &str, query: &str, headers: &HeaderMap) -> Response {
    let root = &controller.root;
    // The issuer's documents are public.
    match path {
        "/oidc/.well-known/openid-configuration" => {
            let mut discovery = fixture("jenkins-openid-configuration.json");
            discovery["issuer"] = json!(format!("{root}oidc"));
            discovery["jwks_uri"] = json!(format!("{root}oidc/jwks"));
            return Json(discovery).into_response();
        }
        "/oidc/jwks" => {
            let rotated = controller.shared.lock().unwrap().jwks.clone();
            return Json(rotated.unwrap_or_else(|| fixture("jenkins-jwks-leading-zero.json"))).into_response();
        }
        _ => {}
    }
    match authenticated(controller, headers) {
        Some(true) => {}
        // Anonymous: Jenkins answers 403 without a challenge.
        None => return (StatusCode::FORBIDDEN, "Authentication required").into_response(),
        Some(false) => {
            let challenge = [(header::WWW_AUTHENTICATE, "Basic realm=\"Jenkins\"")];
            return (StatusCode::UNAUTHORIZED, challenge, "Invalid password/token for user: ci-creds").into_response();
        }
    }
    let tree = tree_of(query);
    if path == "/computer/api/json" {
        return Json(select(&computers(controller), &tree)).into_response();
    }
    let Some((job, number)) = build_path(path) else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    let (build, head) = {
        let shared = controller.shared.lock().unwrap();
        let at = (job.clone(), number);
        (shared.builds.get(&at).cloned(), shared.heads.get(&at).copied())
    };
    let Some(build) = build else {
        return (StatusCode::NOT_FOUND, "Not Found").into_response();
    };
    let mut body = fixture(match build {
        Build::Running { .. } => "jenkins-api-build-running.json",
        Build::Finished(_) => "jenkins-api-build-finished.json",
    });
    if let Build::Finished(result) = build {
        body["result"] = json!(result);
    }
    body["number"] = json!(number);
    body["id"] = json!(number.to_string());
    body["displayName"] = json!(format!("#{number}"));
    body["url"] = json!(format!("{}{}{number}/", root, &job[1..]));
    // The revision is a nested bean, hidden at the default depth: only a tree shows it.
    if !tree.is_empty() {
        body["actions"] = match head {
            Some(name) => fixture(name)["actions"].clone(),
            None => default_head(&job),
        };
    }
    Json(select(&body, &tree)).into_response()
}

/// A branch job of the fixtures' multibranch project `octo-org/octo-repo` builds its branch
/// (jenkins-api-build-branch.json's head, named as the job, its item name decoded once); any
/// other job is no multibranch build (jenkins-api-build-none.json).
fn default_head(job: &str) -> Value {
    let Some(item) = job.strip_prefix("/job/octo-org/job/octo-repo/job/").and_then(|rest| rest.strip_suffix('/'))
    else {
        return fixture("jenkins-api-build-none.json")["actions"].clone();
    };
    let mut actions = fixture("jenkins-api-build-branch.json")["actions"].clone();
    let branch = percent_encoding::percent_decode_str(item).decode_utf8_lossy().into_owned();
    let branch = percent_encoding::percent_decode_str(&branch).decode_utf8_lossy().into_owned();
    for action in actions.as_array_mut().unwrap() {
        if action["_class"] == "jenkins.scm.api.SCMRevisionAction" {
            action["revision"]["head"]["name"] = json!(branch);
        }
    }
    actions
}

/// `Some(true)` for this API's user and token, `Some(false)` for other Basic credentials,
/// `None` for none.
fn authenticated(controller: &Controller, headers: &HeaderMap) -> Option<bool> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let Some(encoded) = value.strip_prefix("Basic ") else { return Some(false) };
    let decoded = STANDARD.decode(encoded).ok().and_then(|bytes| String::from_utf8(bytes).ok());
    Some(decoded.as_deref() == Some(&format!("{API_USER}:{}", controller.api_token)))
}

/// `/job/a/job/b/42/api/json` is build 42 of the job at `/job/a/job/b/`.
fn build_path(path: &str) -> Option<(String, u64)> {
    let rest = path.strip_suffix("/api/json")?;
    let (job, number) = rest.rsplit_once('/')?;
    let number = number.parse().ok()?;
    job.starts_with("/job/").then(|| (format!("{job}/"), number))
}

/// jenkins-api-computer.json for the builds running now: the built-in node, and each agent a
/// build runs on (the fixture's `linux-agent-1` shape, renamed), with one executor per build it
/// runs and one idle.
fn computers(controller: &Controller) -> Value {
    let fixture = fixture("jenkins-api-computer.json");
    let built_in = fixture["computer"][0].clone();
    let agent_shape = fixture["computer"][1].clone();
    let executable_shape = agent_shape["executors"][0]["currentExecutable"].clone();
    let shared = controller.shared.lock().unwrap();
    let mut agents: Vec<(&str, Vec<Value>)> = vec![(AGENT, Vec::new())];
    let mut running: Vec<(&(String, u64), &'static str)> = shared
        .builds
        .iter()
        .filter_map(|(at, build)| match build {
            Build::Running { agent: Some(agent) } => Some((at, *agent)),
            _ => None,
        })
        .collect();
    running.sort();
    for ((job, number), agent) in running {
        let mut executable = executable_shape.clone();
        executable["number"] = json!(number);
        executable["url"] = json!(format!("{}{}{number}/", controller.root, &job[1..]));
        let executor = json!({ "currentExecutable": executable });
        match agents.iter_mut().find(|(name, _)| *name == agent) {
            Some((_, executors)) => executors.push(executor),
            None => agents.push((agent, vec![executor])),
        }
    }
    let mut list = vec![built_in];
    for (name, mut executors) in agents {
        executors.push(json!({ "currentExecutable": null }));
        let mut computer = agent_shape.clone();
        computer["displayName"] = json!(name);
        computer["assignedLabels"] = json!([{ "name": "linux" }, { "name": name }]);
        computer["idle"] = json!(executors.len() == 1);
        computer["executors"] = json!(executors);
        list.push(computer);
    }
    json!({ "_class": fixture["_class"], "computer": list })
}

/// A `tree` parameter's selection: `a,b[c,d[e]]`.
#[derive(Debug)]
struct Node {
    name: String,
    children: Vec<Node>,
}

fn tree_of(query: &str) -> Vec<Node> {
    let spec = query.split('&').find_map(|pair| pair.strip_prefix("tree=")).unwrap_or_default();
    let spec = percent_encoding::percent_decode_str(spec).decode_utf8_lossy().into_owned();
    parse_tree(&mut spec.chars())
}

fn parse_tree(chars: &mut std::str::Chars<'_>) -> Vec<Node> {
    let mut nodes = Vec::new();
    let mut name = String::new();
    while let Some(c) = chars.next() {
        match c {
            ',' if !name.is_empty() => nodes.push(Node { name: std::mem::take(&mut name), children: Vec::new() }),
            ',' => {}
            '[' => nodes.push(Node { name: std::mem::take(&mut name), children: parse_tree(chars) }),
            ']' => break,
            c => name.push(c),
        }
    }
    if !name.is_empty() {
        nodes.push(Node { name, children: Vec::new() });
    }
    nodes
}

/// Only what `tree` names (with `_class`, as Stapler adds it), or everything without a tree.
fn select(value: &Value, tree: &[Node]) -> Value {
    if tree.is_empty() {
        return value.clone();
    }
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|item| select(item, tree)).collect()),
        Value::Object(fields) => {
            let mut kept = serde_json::Map::new();
            if let Some(class) = fields.get("_class") {
                kept.insert("_class".to_owned(), class.clone());
            }
            for node in tree {
                if let Some(field) = fields.get(&node.name) {
                    kept.insert(node.name.clone(), select(field, &node.children));
                }
            }
            Value::Object(kept)
        }
        other => other.clone(),
    }
}
