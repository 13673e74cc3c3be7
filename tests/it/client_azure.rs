//! `ci-creds get` and `ci-creds revoke` run as binaries inside a simulated Azure Pipelines job,
//! against the real broker and OpenBao. Azure DevOps is a loopback stand-in serving what the job
//! and the broker ask of it here: the pipeline's OIDC token request (which checks the job's access
//! token and signs a fresh token for the run each time) and the run's build answer (which checks
//! the broker's personal access token). The organisation's issuer names it by its last segment;
//! the broker reads the shared keys from `jwks_url`.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ci_creds::dev::{DevIssuer, live_claims};
use serde_json::json;

use crate::support::ci_job::{assert_no_secret, ci_creds, err, out};
use crate::support::stack::Stack;
use crate::support::{fixture, free_port, start_issuer, wait_until};

const ORG: &str = "0ca3ddd9-f0b0-4635-a98c-5866526961b6";
const PROJECT: &str = "271ef6f7-5998-4b0f-86fb-4b54d9129990";
const RUN: &str = "4711";
/// `System.AccessToken`: what the job's token request is authenticated with.
const ACCESS_TOKEN: &str = "azure-system-access-token-51d0";
/// The broker's personal access token for the build API.
const PAT: &str = "azure-devops-pat-builds-read-9e2";
const PAT_ENV: &str = "TEST_AZURE_DEVOPS_PAT";
const FIXED_AUDIENCE: &str = "api://AzureADTokenExchange";
const FAST_RETRY: &str = "50ms";

const ROLES: &str = r#"  - name: azure-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - issuer: azure
        owner_id: "0ca3ddd9-f0b0-4635-a98c-5866526961b6"
        repository: octo-org/octo-repo
        ref: refs/heads/main
        claims: { prj_id: "271ef6f7-5998-4b0f-86fb-4b54d9129990", def_id: "12" }
"#;

/// One request the stand-in answered.
struct Seen {
    method: Method,
    uri: String,
    headers: HeaderMap,
    body: Bytes,
}

struct AzureDevOps {
    url: String,
    keys: Arc<DevIssuer>,
    state: Arc<Shared>,
}

struct Shared {
    issuer: String,
    keys: Arc<DevIssuer>,
    seen: Mutex<Vec<Seen>>,
    issued: Mutex<Vec<String>>,
}

impl AzureDevOps {
    async fn start() -> Self {
        let keys = start_issuer().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        // Like vstoken.dev.azure.com/{org}: one issuer per organisation, keys shared by all.
        let issuer = format!("{url}/{ORG}");
        let state = Arc::new(Shared {
            issuer,
            keys: keys.clone(),
            seen: Mutex::new(Vec::new()),
            issued: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new().fallback(answer).with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, keys, state }
    }

    /// The broker's issuer, build API and the env holding its personal access token.
    fn broker_config(&self) -> String {
        format!(
            "\n[ci_api.azure]\napi_url = \"{url}/{ORG}\"\ntoken_env = \"{PAT_ENV}\"\ntimeout_seconds = 2\n\
             \n[[issuers]]\nname = \"azure\"\nkind = \"azure_pipelines\"\nissuer = \"{issuer}\"\njwks_url = \"{jwks}/.well-known/jwks\"\n",
            url = self.url,
            issuer = self.state.issuer,
            jwks = self.keys.url(),
        )
    }

    /// What a step of run 4711 has in its environment: the request URI, set in every step, and
    /// the access token where the pipeline maps it.
    fn job_env(&self, access_token: Option<&str>) -> Vec<(&'static str, String)> {
        let uri = format!(
            "{}/{ORG}/{PROJECT}/_apis/distributedtask/hubs/build/plans/44c0e1b9-d0fc-4144-8d34-b38eef7537bd/jobs/12f1170f-54f2-53f3-20dd-22fc7dff55f9/oidctoken",
            self.url
        );
        let mut env = vec![("SYSTEM_OIDCREQUESTURI", uri)];
        env.extend(access_token.map(|token| ("SYSTEM_ACCESSTOKEN", token.to_owned())));
        env
    }

    fn issued(&self) -> Vec<String> {
        self.state.issued.lock().unwrap().clone()
    }

    /// The requests whose path contains `part`.
    fn requests(&self, part: &str) -> Vec<(Method, String, HeaderMap, Bytes)> {
        let seen = self.state.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.uri.contains(part))
            .map(|s| (s.method.clone(), s.uri.clone(), s.headers.clone(), s.body.clone()))
            .collect()
    }
}

async fn answer(
    State(state): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let path = uri.path().to_owned();
    state.seen.lock().unwrap().push(Seen { method: method.clone(), uri: uri.to_string(), headers, body });
    let api_version = uri.query() == Some("api-version=7.1");
    if method == Method::POST && path.ends_with("/oidctoken") && api_version {
        if authorization != format!("Bearer {ACCESS_TOKEN}") {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let claims = live_claims(&fixture("azure-pipelines-token-claims.json"), &state.issuer, FIXED_AUDIENCE, 300);
        let token = state.keys.sign(&claims).expect("signs");
        state.issued.lock().unwrap().push(token.clone());
        return axum::Json(json!({ "oidcToken": token })).into_response();
    }
    if method == Method::GET && path == format!("/{ORG}/{PROJECT}/_apis/build/builds/{RUN}") && api_version {
        if authorization != format!("Basic {}", STANDARD.encode(format!(":{PAT}"))) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        return axum::Json(fixture("azure-pipelines-api-build-inprogress.json")).into_response();
    }
    // The run's timeline: job `Compile` (the fixture's job record) in progress.
    if method == Method::GET && path == format!("/{ORG}/{PROJECT}/_apis/build/builds/{RUN}/timeline") && api_version {
        if authorization != format!("Basic {}", STANDARD.encode(format!(":{PAT}"))) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        return axum::Json(fixture("azure-pipelines-api-timeline.json")).into_response();
    }
    StatusCode::NOT_FOUND.into_response()
}

async fn vault_status(stack: &Stack, token: &str) -> u16 {
    stack.bao.request(reqwest::Method::GET, "secret/data/config/app", token, None).await.0
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_an_azure_pipelines_job_requests_the_token_and_sets_masked_variables_then_revokes() {
    let azure = AzureDevOps::start().await;
    let stack = Stack::start_with(&azure.broker_config(), ROLES, vec![(PAT_ENV, PAT.to_owned())]).await;
    let mut env = azure.job_env(Some(ACCESS_TOKEN));
    env.push(("CI_CREDS_BROKER", stack.broker.url.clone()));

    let output = ci_creds(&["get", "--role", "azure-read", "--format", "azure"], &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let stdout = out(&output);
    let vault_token = stdout
        .lines()
        .find_map(|l| l.strip_prefix("##vso[task.setvariable variable=VAULT_TOKEN;issecret=true]"))
        .unwrap_or_else(|| panic!("no VAULT_TOKEN command in {stdout}"))
        .to_owned();
    assert_eq!(
        stdout,
        format!(
            "##vso[task.setvariable variable=VAULT_ADDR]{}\n##vso[task.setvariable variable=VAULT_TOKEN;issecret=true]{vault_token}\n",
            stack.vault_proxy.address
        )
    );
    assert_eq!(vault_status(&stack, &vault_token).await, 200, "the variable's token works");

    let asked = azure.requests("/oidctoken");
    assert_eq!(asked.len(), 1);
    let (method, uri, headers, body) = &asked[0];
    assert_eq!(method, Method::POST);
    assert!(uri.ends_with("/oidctoken?api-version=7.1"), "no audience sent: {uri}");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(&body[..], b"{}");
    let build_api = azure.requests("/_apis/build/builds/");
    assert!(!build_api.is_empty(), "the broker asked whether the run goes on");
    let leases = stack.leases("azure", RUN).await;
    assert_eq!(leases.len(), 1, "bound to run {RUN}");

    // The template's final step: the same job, a fresh token, the run's credentials revoked.
    let revoked = ci_creds(&["revoke"], &env).await;
    assert_eq!(revoked.status.code(), Some(0), "{}", err(&revoked));
    assert_eq!(out(&revoked), format!("revoked 1 credential(s) of job {RUN}\n"));
    assert_eq!(azure.requests("/oidctoken").len(), 2);
    wait_until("OpenBao refusing the revoked token", || async { vault_status(&stack, &vault_token).await == 403 })
        .await;

    let mut secrets = azure.issued();
    secrets.extend([vault_token, ACCESS_TOKEN.to_owned(), PAT.to_owned()]);
    assert_no_secret(&output, &secrets);
    assert_no_secret(&revoked, &secrets);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_an_azure_pipelines_job_names_its_job_so_its_credentials_are_that_jobs() {
    const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";
    let azure = AzureDevOps::start().await;
    let stack = Stack::start_with(&azure.broker_config(), ROLES, vec![(PAT_ENV, PAT.to_owned())]).await;
    let mut env = azure.job_env(Some(ACCESS_TOKEN));
    env.push(("CI_CREDS_BROKER", stack.broker.url.clone()));
    // Azure Pipelines sets both in every step.
    env.push(("SYSTEM_JOBID", JOB.to_owned()));
    env.push(("SYSTEM_JOBATTEMPT", "1".to_owned()));

    let output = ci_creds(&["get", "--role", "azure-read", "--format", "azure"], &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let job_id = format!("{RUN}/{JOB}/1");
    assert_eq!(stack.leases("azure", &job_id).await.len(), 1, "bound to the job within run {RUN}");
    assert!(stack.leases("azure", RUN).await.is_empty(), "not to the run");
    assert_eq!(azure.requests("/timeline").len(), 1, "the broker asked the run's timeline");

    let revoked = ci_creds(&["revoke"], &env).await;
    assert_eq!(revoked.status.code(), Some(0), "{}", err(&revoked));
    assert_eq!(out(&revoked), format!("revoked 1 credential(s) of job {job_id}\n"));

    // Variables that name no job stop the client before anything is asked.
    let mut wrong = env.clone();
    wrong.retain(|(name, _)| *name != "SYSTEM_JOBATTEMPT");
    wrong.push(("SYSTEM_JOBATTEMPT", "first".to_owned()));
    let output = ci_creds(&["get", "--role", "azure-read", "--format", "azure"], &wrong).await;
    assert_eq!(output.status.code(), Some(3), "{}", err(&output));
    assert!(err(&output).contains("$SYSTEM_JOBATTEMPT is not a whole number"), "{}", err(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_an_azure_pipelines_step_without_the_access_token_says_how_to_map_it() {
    let azure = AzureDevOps::start().await;
    let output = ci_creds(
        &["get", "--broker", "http://127.0.0.1:9", "--role", "azure-read", "--format", "azure"],
        &azure.job_env(None),
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", err(&output));
    assert_eq!(out(&output), "");
    let stderr = err(&output);
    assert!(stderr.contains("$SYSTEM_OIDCREQUESTURI is set but $SYSTEM_ACCESSTOKEN is not"), "{stderr}");
    assert!(stderr.contains("`env: SYSTEM_ACCESSTOKEN: $(System.AccessToken)`"), "{stderr}");
    assert!(azure.requests("").is_empty(), "nothing asked without the access token");
}

#[tokio::test(flavor = "multi_thread")]
async fn client_with_a_wrong_azure_access_token_exits_3_without_printing_it() {
    let azure = AzureDevOps::start().await;
    let wrong = "not-this-jobs-access-token";
    let output =
        ci_creds(&["get", "--broker", "http://127.0.0.1:9", "--role", "azure-read"], &azure.job_env(Some(wrong))).await;
    assert_eq!(output.status.code(), Some(3), "{}", err(&output));
    let stderr = err(&output);
    assert!(stderr.contains("Azure Pipelines' OIDC token request: answered HTTP 401"), "{stderr}");
    let (_, _, headers, _) = &azure.requests("/oidctoken")[0];
    assert_eq!(headers["authorization"], format!("Bearer {wrong}").as_str());
    assert_no_secret(&output, &[wrong.to_owned()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_azure_pipelines_retries_an_unreachable_broker_each_time_with_a_fresh_token() {
    let azure = AzureDevOps::start().await;
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let output = ci_creds(
        &["get", "--broker", &nowhere, "--role", "azure-read", "--format", "azure", "--retry-delay", FAST_RETRY],
        &azure.job_env(Some(ACCESS_TOKEN)),
    )
    .await;
    assert_eq!(output.status.code(), Some(5), "{}", err(&output));
    let issued = azure.issued();
    assert_eq!(issued.len(), 4, "the first attempt and 3 retries");
    assert!(issued.windows(2).all(|w| w[0] != w[1]), "each a fresh token");
    assert_eq!(err(&output).matches("with a fresh CI token (attempt").count(), 3, "{}", err(&output));
    let mut secrets = issued;
    secrets.push(ACCESS_TOKEN.to_owned());
    assert_no_secret(&output, &secrets);
}
