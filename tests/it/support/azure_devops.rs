//! Azure DevOps on loopback, as a pipeline's OIDC token, the build API and service hooks show it:
//! one issuer per organisation (`<root><org_id>`, as `https://vstoken.dev.azure.com/{org_id}`)
//! whose discovery points at ONE JWKS shared by every organisation (`<root>.well-known/jwks`),
//! tokens signed RS256 with a key generated here, the build API at
//! `<root><org name>/<project>/_apis/build/builds/<run>` answering from the fixtures of run 4711
//! (in progress, completed, another status, 404, 500, 429 with `Retry-After`, or too slow), its
//! timeline at `…/builds/<run>/timeline` (the fixture's stage and phase, and the job records a
//! test sets), and service hook bodies. The API takes a personal access token as HTTP Basic password, any
//! user: none or a wrong one gets 401, as Azure DevOps answers an API call. A job's OIDC token
//! request (`POST $(System.OidcRequestUri)?api-version=7.1`, at the URI [`AzureDevOps::job_env`]
//! gives a job of a run) takes the job's `System.AccessToken` as a bearer token and answers
//! `{"oidcToken": …}`, a fresh token of that run each time. Every request is recorded with its
//! method, headers, body, the status it got and the Basic user it carried.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ci_creds::dev::SigningKey;
use jsonwebtoken::{Algorithm, Header};
use serde_json::{Value, json};

use super::fixture;

/// The audience of every pipeline token: fixed by Azure DevOps.
pub const AZURE_AUDIENCE: &str = "api://AzureADTokenExchange";
/// The fixtures' organisation: its id (the `org_id` claim, the issuer's last segment) and name
/// (the build API's first segment).
pub const ORG: Org = Org { id: "0ca3ddd9-f0b0-4635-a98c-5866526961b6", name: "octo-org" };
/// Another organisation, whose tokens the same shared key signs.
pub const OTHER_ORG: Org = Org { id: "5e1f2a3b-7c4d-4e5f-8a9b-0c1d2e3f4a5b", name: "other-org" };
/// The fixtures' project (`prj_id`) and pipeline definition (`def_id`).
pub const PROJECT: &str = "271ef6f7-5998-4b0f-86fb-4b54d9129990";
pub const DEFINITION: &str = "12";
/// The fixtures' run.
pub const RUN: u64 = 4711;
/// `user:password` set on the service hook subscription.
pub const HOOK_CREDENTIALS: &str = "azure-hooks:h00k-s3cret";
/// The env vars the broker reads the PAT and the hook credentials from.
pub const PAT_ENV: &str = "TEST_AZURE_DEVOPS_PAT";
pub const HOOK_ENV: &str = "TEST_AZURE_HOOK_CREDENTIALS";

#[derive(Clone, Copy, Debug)]
pub struct Org {
    pub id: &'static str,
    pub name: &'static str,
}

/// How the build API answers for one run.
#[derive(Clone, Debug)]
pub enum Run {
    /// `status` `inProgress` (azure-pipelines-api-build-inprogress.json).
    InProgress,
    /// `status` `completed`, `result` `succeeded` (…-completed.json).
    Completed,
    /// The in-progress answer with another `status` (`notStarted`, `postponed` …).
    Status(&'static str),
    /// 500 with Azure DevOps' error body.
    ServerError,
    /// 429 with `Retry-After` and the `X-RateLimit-*` headers Azure DevOps sends.
    TooManyRequests { retry_after_seconds: u64 },
    /// In progress, but only after this long: longer than the broker waits.
    Slow(Duration),
}

/// Job `Compile` of stage `Build` (the fixtures' job): its timeline record's id, its `System.JobId`.
pub const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";
/// Another job of the same run.
pub const SIBLING: &str = "3dc8fd7e-4368-5a92-293e-d53cefc8c4c3";
/// The build answers' queue (the run's pool's): a job record on it runs in that pool.
pub const RUN_QUEUE: u64 = 4799;

/// One attempt of a job as the run's timeline shows it.
#[derive(Clone, Debug)]
pub struct TimelineJob {
    pub id: &'static str,
    pub attempt: u32,
    /// `pending`, `inProgress` or `completed`.
    pub state: &'static str,
    /// The agent, once one runs it.
    pub worker: Option<&'static str>,
    /// `queueId`: null for a job no agent queue runs (an agentless job) or not yet queued.
    pub queue_id: Option<u64>,
}

impl TimelineJob {
    /// The first attempt of job `id`, in `state`, on `worker`, in the run's queue.
    pub fn new(id: &'static str, state: &'static str, worker: Option<&'static str>) -> Self {
        Self { id, attempt: 1, state, worker, queue_id: Some(RUN_QUEUE) }
    }
}

/// An agent pool as the build answer's `queue.pool` names it.
#[derive(Clone, Debug)]
pub struct AgentPool {
    pub name: &'static str,
    pub hosted: bool,
}

/// A self-hosted pool of the organisation's own agents.
pub const SELF_HOSTED_POOL: AgentPool = AgentPool { name: "linux-pool", hosted: false };

/// One request the stand-in received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: Method,
    /// Path and query, as sent.
    pub target: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// 0 while unanswered, or when the caller gave up first.
    pub status: u16,
    /// The user of HTTP Basic credentials, if any were sent.
    pub basic_user: Option<String>,
}

#[derive(Default)]
struct Shared {
    /// By organisation name, project id and run id. A run never set is not found (404).
    runs: HashMap<(String, String, u64), Run>,
    /// Each run's job records, by the same key; a run without any shows none.
    jobs: HashMap<(String, String, u64), Vec<TimelineJob>>,
    /// Each run's pool, by the same key, where it is not the fixtures' Microsoft-hosted one.
    pools: HashMap<(String, String, u64), AgentPool>,
    requests: Vec<Seen>,
    /// The run each job's OIDC request URI asks for, by its plan id (one per [`AzureDevOps::job_env`]).
    plans: HashMap<String, (Org, u64)>,
    /// Every pipeline token the OIDC token request endpoint handed out, in order.
    issued: Vec<String>,
}

#[derive(Clone)]
struct Service {
    root: Arc<str>,
    pat: Arc<str>,
    access_token: Arc<str>,
    key: Arc<SigningKey>,
    shared: Arc<Mutex<Shared>>,
}

pub struct AzureDevOps {
    /// `http://127.0.0.1:PORT/`, with its slash.
    pub root: String,
    /// The personal access token the build API takes.
    pub pat: String,
    /// `System.AccessToken`: what a job's OIDC token request is authenticated with.
    pub access_token: String,
    key: Arc<SigningKey>,
    shared: Arc<Mutex<Shared>>,
}

impl AzureDevOps {
    pub async fn start() -> Self {
        let key = SigningKey::generate_rs256().expect("RSA key");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let root = format!("http://{}/", listener.local_addr().expect("address"));
        let pat = format!("pat{}", uuid::Uuid::new_v4().simple());
        let access_token = format!("system-access-token-{}", uuid::Uuid::new_v4().simple());
        let key = Arc::new(key);
        let shared = Arc::new(Mutex::new(Shared::default()));
        let service = Service {
            root: root.as_str().into(),
            pat: pat.as_str().into(),
            access_token: access_token.as_str().into(),
            key: key.clone(),
            shared: shared.clone(),
        };
        let router = Router::new().fallback(answer).with_state(service);
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { root, pat, access_token, key, shared }
    }

    /// What a step of run `run` of `org` has in its environment: `SYSTEM_OIDCREQUESTURI`, set in
    /// every step, and `SYSTEM_ACCESSTOKEN` where the pipeline maps one (`access_token`). Each call
    /// is a job of its own plan.
    pub fn job_env(&self, org: Org, run: u64, access_token: Option<&str>) -> Vec<(&'static str, String)> {
        let plan = uuid::Uuid::new_v4().to_string();
        self.shared.lock().unwrap().plans.insert(plan.clone(), (org, run));
        let uri = format!(
            "{}{}/{PROJECT}/_apis/distributedtask/hubs/build/plans/{plan}/jobs/12f1170f-54f2-53f3-20dd-22fc7dff55f9/oidctoken",
            self.root, org.name
        );
        let mut env = vec![("SYSTEM_OIDCREQUESTURI", uri)];
        env.extend(access_token.map(|token| ("SYSTEM_ACCESSTOKEN", token.to_owned())));
        env
    }

    /// Every pipeline token the OIDC token request endpoint handed out, in order.
    pub fn issued(&self) -> Vec<String> {
        self.shared.lock().unwrap().issued.clone()
    }

    /// The OIDC token requests received, in order.
    pub fn token_requests(&self) -> Vec<Seen> {
        self.requests().into_iter().filter(|seen| seen.target.contains("/oidctoken")).collect()
    }

    /// The issuer of `org`'s pipeline tokens: `<root><org id>`.
    pub fn issuer(&self, org: Org) -> String {
        format!("{}{}", self.root, org.id)
    }

    /// An `[[issuers]]` entry named `name`, kind `azure_pipelines`, pinning `org`'s issuer, with
    /// `extra` lines (e.g. `audience = …`).
    pub fn issuer_config(&self, name: &str, org: Org, extra: &str) -> String {
        format!(
            "\n[[issuers]]\nname = \"{name}\"\nkind = \"azure_pipelines\"\nissuer = \"{}\"\n{extra}\n",
            self.issuer(org)
        )
    }

    /// `[ci_api.<name>]` on `org`'s build API with the PAT, with `extra` lines.
    pub fn api_config(&self, name: &str, org: Org, extra: &str) -> String {
        format!(
            "\n[ci_api.{name}]\napi_url = \"{}{}\"\ntoken_env = \"{PAT_ENV}\"\ntimeout_seconds = 2\n{extra}\n",
            self.root, org.name
        )
    }

    /// `[webhooks.azure_pipelines]` for issuer `issuer`, taking [`HOOK_CREDENTIALS`].
    pub fn webhook_config(&self, issuer: &str) -> String {
        format!("\n[webhooks.azure_pipelines]\nissuer = \"{issuer}\"\ncredentials_env = \"{HOOK_ENV}\"\n")
    }

    /// The broker's environment for the PAT and the hook credentials.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![(PAT_ENV, self.pat.clone()), (HOOK_ENV, HOOK_CREDENTIALS.to_owned())]
    }

    /// How the build API answers for run `run` of the fixtures' project in `org` from now on.
    pub fn set_run(&self, org: Org, run: u64, answer: Run) {
        self.shared.lock().unwrap().runs.insert((org.name.to_owned(), PROJECT.to_owned(), run), answer);
    }

    /// Runs run `run` of `org` in `pool` from now on (its queue stays the run's queue).
    pub fn set_pool(&self, org: Org, run: u64, pool: AgentPool) {
        self.shared.lock().unwrap().pools.insert((org.name.to_owned(), PROJECT.to_owned(), run), pool);
    }

    /// Shows `job` in the timeline of run `run` of `org` from now on, in place of any record of
    /// the same job id.
    pub fn set_job(&self, org: Org, run: u64, job: TimelineJob) {
        let mut shared = self.shared.lock().unwrap();
        let jobs = shared.jobs.entry((org.name.to_owned(), PROJECT.to_owned(), run)).or_default();
        jobs.retain(|shown| shown.id != job.id);
        jobs.push(job);
    }

    /// How many times the timeline of run `run` of `org` was asked for.
    pub fn timeline_calls(&self, org: Org, run: u64) -> usize {
        let path = format!("/{}/{PROJECT}/_apis/build/builds/{run}/timeline?api-version=7.1", org.name);
        self.requests().iter().filter(|seen| seen.target == path).count()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// How many requests had a path starting with `prefix`.
    pub fn calls(&self, prefix: &str) -> usize {
        self.requests().iter().filter(|seen| seen.target.starts_with(prefix)).count()
    }

    /// The build API's path for run `run` of the fixtures' project in `org`, as the broker asks.
    pub fn build_path(&self, org: Org, run: u64) -> String {
        format!("/{}/{PROJECT}/_apis/build/builds/{run}?api-version=7.1", org.name)
    }

    /// How many times run `run` of `org` was asked about.
    pub fn build_calls(&self, org: Org, run: u64) -> usize {
        let path = self.build_path(org, run);
        self.requests().iter().filter(|seen| seen.target == path).count()
    }

    /// azure-pipelines-token-claims.json live for run `run` of `org`: `iss` its issuer, `org_id`,
    /// `run_id`, `aud` the fixed audience, a fresh `jti`, `iat` now, `nbf` ten minutes before
    /// and `exp` five minutes after (as Azure DevOps mints them).
    pub fn claims(&self, org: Org, run: u64) -> Value {
        live_claims(&self.root, org, run)
    }

    /// A token of run `run` of `org`, its claims edited by `edit`.
    pub fn token(&self, org: Org, run: u64, edit: impl FnOnce(&mut Value)) -> String {
        let mut claims = self.claims(org, run);
        edit(&mut claims);
        self.sign(&claims)
    }

    /// Signs with the shared key: RS256, `kid` the key's, `typ` JWT.
    pub fn sign(&self, claims: &Value) -> String {
        sign(&self.key, claims)
    }
}

/// See [`AzureDevOps::claims`]; `root` is the stand-in's.
fn live_claims(root: &str, org: Org, run: u64) -> Value {
    let now = ci_creds::clock::now();
    let mut claims = fixture("azure-pipelines-token-claims.json");
    claims["iss"] = json!(format!("{root}{}", org.id));
    claims["org_id"] = json!(org.id);
    claims["run_id"] = json!(run.to_string());
    claims["aud"] = json!(AZURE_AUDIENCE);
    claims["jti"] = json!(uuid::Uuid::new_v4().to_string());
    claims["iat"] = json!(now);
    claims["nbf"] = json!(now - 600);
    claims["exp"] = json!(now + 300);
    claims
}

fn sign(key: &SigningKey, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(key.kid.clone());
    header.typ = Some("JWT".to_owned());
    key.sign_with_header(&header, claims).expect("signs")
}

/// A `ms.vss-pipelines.run-state-changed-event` delivery (azure-pipelines-hook-run-completed.json)
/// of run `run` in `state`, with delivery id `delivery` (the same for a redelivery).
pub fn run_state_changed(run: u64, state: &str, delivery: &str) -> Vec<u8> {
    let mut hook = fixture("azure-pipelines-hook-run-completed.json");
    hook["id"] = json!(delivery);
    hook["resource"]["run"]["id"] = json!(run);
    hook["resource"]["run"]["state"] = json!(state);
    hook["resource"]["runId"] = json!(run);
    if state != "completed" {
        let run = hook["resource"]["run"].as_object_mut().unwrap();
        run.remove("result");
        run.remove("finishedDate");
    }
    serde_json::to_vec(&hook).unwrap()
}

/// A `ms.vss-pipelines.job-state-changed-event` delivery (azure-pipelines-hook-job-completed.json):
/// the fixtures' job ([`JOB`], attempt 1) of run `run` completed, the run going on.
pub fn job_state_changed(run: u64, delivery: &str) -> Vec<u8> {
    job_completed(run, JOB, 1, delivery)
}

/// The same delivery for attempt `attempt` of job `job`.
pub fn job_completed(run: u64, job: &str, attempt: u32, delivery: &str) -> Vec<u8> {
    let mut hook = fixture("azure-pipelines-hook-job-completed.json");
    hook["id"] = json!(delivery);
    hook["resource"]["run"]["id"] = json!(run);
    hook["resource"]["job"]["id"] = json!(job);
    hook["resource"]["job"]["attempt"] = json!(attempt);
    serde_json::to_vec(&hook).unwrap()
}

/// The headers a service hook sends, with `credentials` (`user:password`) as HTTP Basic.
pub fn hook_headers(credentials: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("content-type", "application/json; charset=utf-8".to_owned())];
    if let Some(credentials) = credentials {
        headers.push(("authorization", format!("Basic {}", STANDARD.encode(credentials))));
    }
    headers
}

async fn answer(State(service): State<Service>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let credentials = basic(&parts.headers);
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let basic_user = credentials.as_ref().map(|(user, _)| user.clone());
    let Ok(body) = axum::body::to_bytes(body, 64 * 1024).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let (method, headers) = (parts.method, parts.headers);
    // Recorded on arrival: a caller that gives up before the answer leaves status 0.
    let index = {
        let mut shared = service.shared.lock().unwrap();
        let seen = Seen { method: method.clone(), target, headers: headers.clone(), body, status: 0, basic_user };
        shared.requests.push(seen);
        shared.requests.len() - 1
    };
    let response = if method == Method::POST && path.ends_with("/oidctoken") {
        oidc_token(&service, &path, &query, &headers)
    } else {
        respond(&service, &path, &query, credentials.as_ref()).await
    };
    service.shared.lock().unwrap().requests[index].status = response.status().as_u16();
    response
}

/// A job's OIDC token request: the job's access token as bearer, its plan one `job_env` gave.
fn oidc_token(service: &Service, path: &str, query: &str, headers: &HeaderMap) -> Response {
    let bearer = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    if bearer != Some(format!("Bearer {}", service.access_token).as_str()) {
        return (StatusCode::UNAUTHORIZED, "Access Denied: the access token is not valid.").into_response();
    }
    if !query.split('&').any(|pair| pair == "api-version=7.1") {
        return (
            StatusCode::BAD_REQUEST,
            Json(error_body("VssVersionNotSpecifiedException", "No api-version was supplied for the request.")),
        )
            .into_response();
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let plan = match segments[..] {
        [_, _, "_apis", "distributedtask", "hubs", "build", "plans", plan, "jobs", _, "oidctoken"] => plan,
        _ => return not_found("no such resource"),
    };
    let run = service.shared.lock().unwrap().plans.get(plan).copied();
    let Some((org, run)) = run.filter(|(org, _)| segments[0] == org.name) else {
        return not_found("no such plan");
    };
    let token = sign(&service.key, &live_claims(&service.root, org, run));
    service.shared.lock().unwrap().issued.push(token.clone());
    Json(json!({ "oidcToken": token })).into_response()
}

async fn respond(service: &Service, path: &str, query: &str, credentials: Option<&(String, String)>) -> Response {
    // The token service's documents are public.
    if path == "/.well-known/jwks" {
        return Json(json!({ "keys": [service.key.jwk()] })).into_response();
    }
    if let Some(org_id) = path.strip_suffix("/.well-known/openid-configuration").and_then(|p| p.strip_prefix('/')) {
        if org_id.contains('/') {
            return not_found("no such organisation");
        }
        let mut discovery = fixture("azure-pipelines-openid-configuration.json");
        discovery["issuer"] = json!(format!("{}{org_id}", service.root));
        discovery["jwks_uri"] = json!(format!("{}.well-known/jwks", service.root));
        return Json(discovery).into_response();
    }
    // The REST API: a PAT as the Basic password, whatever the user.
    if credentials.is_none_or(|(_, password)| password.as_str() != &*service.pat) {
        let challenge = [(header::WWW_AUTHENTICATE, "Basic realm=\"https://dev.azure.com/\"")];
        return (StatusCode::UNAUTHORIZED, challenge, "Access Denied: The Personal Access Token used is not valid.")
            .into_response();
    }
    let Some((org, project, run, timeline)) = build_of(path) else { return not_found("no such resource") };
    if !query.split('&').any(|pair| pair == "api-version=7.1") {
        return (
            StatusCode::BAD_REQUEST,
            Json(error_body("VssVersionNotSpecifiedException", "No api-version was supplied for the request.")),
        )
            .into_response();
    }
    let key = (org, project.clone(), run);
    let answer = service.shared.lock().unwrap().runs.get(&key).cloned();
    let Some(answer) = answer else {
        return not_found(&format!("The requested build {run} could not be found."));
    };
    if timeline {
        let jobs = service.shared.lock().unwrap().jobs.get(&key).cloned().unwrap_or_default();
        return Json(timeline_of(&jobs)).into_response();
    }
    let status = match answer {
        Run::InProgress => "inProgress",
        Run::Status(status) => status,
        Run::Completed => "completed",
        Run::Slow(delay) => {
            tokio::time::sleep(delay).await;
            "inProgress"
        }
        Run::ServerError => {
            let body = error_body("VssServiceException", "TF400898: An Internal Error Occurred.");
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
        }
        Run::TooManyRequests { retry_after_seconds } => {
            let headers = [
                ("retry-after", retry_after_seconds.to_string()),
                ("x-ratelimit-resource", "Core".to_owned()),
                ("x-ratelimit-delay", "6.5".to_owned()),
                ("x-ratelimit-limit", "200".to_owned()),
                ("x-ratelimit-remaining", "0".to_owned()),
            ];
            let mut response =
                (StatusCode::TOO_MANY_REQUESTS, "Request was blocked due to exceeding usage of resource 'Core'.")
                    .into_response();
            for (name, value) in headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            return response;
        }
    };
    let mut body = fixture(if status == "completed" {
        "azure-pipelines-api-build-completed.json"
    } else {
        "azure-pipelines-api-build-inprogress.json"
    });
    body["id"] = json!(run);
    body["status"] = json!(status);
    body["project"]["id"] = json!(project);
    let pool = service.shared.lock().unwrap().pools.get(&key).cloned();
    if let Some(AgentPool { name, hosted }) = pool {
        body["queue"]["name"] = json!(name);
        body["queue"]["pool"] = json!({ "id": 9, "name": name, "isHosted": hosted });
    }
    Json(body).into_response()
}

/// `/{org}/{project}/_apis/build/builds/{run}`, or its `/timeline`, path segments as sent.
fn build_of(path: &str) -> Option<(String, String, u64, bool)> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments[..] {
        [org, project, "_apis", "build", "builds", run] => {
            Some((org.to_owned(), project.to_owned(), run.parse().ok()?, false))
        }
        [org, project, "_apis", "build", "builds", run, "timeline"] => {
            Some((org.to_owned(), project.to_owned(), run.parse().ok()?, true))
        }
        _ => None,
    }
}

/// azure-pipelines-api-timeline.json with its stage and phase, and a record per job in `jobs`
/// shaped as the fixture's job record.
fn timeline_of(jobs: &[TimelineJob]) -> Value {
    let mut timeline = fixture("azure-pipelines-api-timeline.json");
    let records = timeline["records"].as_array_mut().unwrap();
    let template = records.pop().expect("the fixture's job record");
    for job in jobs {
        let mut record = template.clone();
        record["id"] = json!(job.id);
        record["attempt"] = json!(job.attempt);
        record["state"] = json!(job.state);
        record["workerName"] = json!(job.worker);
        record["queueId"] = json!(job.queue_id);
        if job.state == "completed" {
            record["result"] = json!("succeeded");
            record["finishTime"] = json!("2025-04-28T11:38:12.6133333Z");
        }
        records.push(record);
    }
    timeline
}

/// The user and password of HTTP Basic credentials.
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let decoded = STANDARD.decode(value.strip_prefix("Basic ")?).ok()?;
    let (user, password) =
        String::from_utf8(decoded).ok()?.split_once(':').map(|(u, p)| (u.to_owned(), p.to_owned()))?;
    Some((user, password))
}

/// Azure DevOps' error body: the exception's type and message.
fn error_body(type_key: &str, message: &str) -> Value {
    json!({ "$id": "1", "innerException": null, "message": message, "typeKey": type_key, "errorCode": 0, "eventId": 3000 })
}

fn not_found(message: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(error_body("BuildNotFoundException", message))).into_response()
}
