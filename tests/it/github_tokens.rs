//! GitHub App installation tokens as a credential: minted with exactly the role's scope, working
//! during the job, dead at GitHub after it ends (webhook, self-revoke) or at the role's `max_ttl`,
//! and never written anywhere a reader of logs, audit trail or `leases list` would see them.

use std::time::Duration;

use ci_creds::store::LeaseState;
use serde_json::{Value, json};

use crate::support::ci_job::{ci_creds, err, out};
use crate::support::github_api::{GithubApi, INSTALLATION_ID, Mode};
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{AUDIENCE, fixture, github_token, wait_until};

const GITHUB_JOB: &str = "289782451";

/// Appended to the stack's policy roles.
const GITHUB_ROLES: &str = r#"
  - name: release-bot
    backend: github
    max_ttl: 30m
    github:
      owner: octo-org
      repositories: [app, infra]
      permissions: { contents: write, pull_requests: write }
    allow:
      - issuer: github
        repository_id: "74"
  - name: read-deps
    backend: github
    max_ttl: 10m
    github:
      owner: octo-org
      repository_ids: [1296269]
      permissions: { contents: read }
    allow:
      - issuer: github
        repository_id: "74"
  - name: not-installed
    backend: github
    max_ttl: 10m
    github:
      owner: someone-else
      repositories: [app]
      permissions: { contents: read }
    allow:
      - issuer: github
        repository_id: "74"
  - name: brief-bot
    backend: github
    max_ttl: 2s
    github:
      owner: octo-org
      repositories: [app]
      permissions: { issues: write }
    allow:
      - issuer: github
        repository_id: "74"
  - name: unreachable-repo
    backend: github
    max_ttl: 10m
    github:
      owner: octo-org
      repositories: [secret-project]
      permissions: { contents: read }
    allow:
      - issuer: github
        repository_id: "74"
"#;

async fn start(api_url: &str, api: &GithubApi) -> Stack {
    let config = format!(
        "[github]\napi_url = \"{api_url}\"\napp_id = \"{}\"\nprivate_key_env = \"TEST_GITHUB_MINT_KEY\"\ntimeout_seconds = 2\n",
        crate::support::github_api::APP_ID
    );
    Stack::start_with(&config, GITHUB_ROLES, vec![("TEST_GITHUB_MINT_KEY", api.private_key_pem.clone())]).await
}

async fn exchange(stack: &Stack, roles: &[&str]) -> (u16, Value, reqwest::header::HeaderMap) {
    let response = stack
        .broker
        .http()
        .post(format!("{}/v1/credentials", stack.broker.url))
        .bearer_auth(github_token(&stack.github, |_| {}))
        .json(&json!({ "roles": roles }))
        .send()
        .await
        .expect("the broker answers");
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, response.json().await.unwrap_or(Value::Null), headers)
}

fn token_of(answer: &Value, role: &str) -> String {
    let credential =
        answer["credentials"].as_array().unwrap().iter().find(|c| c["role"] == role).expect("role granted");
    credential["github"]["token"].as_str().expect("a token").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn mints_exactly_the_roles_scope_and_the_token_works() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (status, answer, _) = exchange(&stack, &["release-bot", "read-deps", "read-config"]).await;
    assert_eq!(status, 200, "{answer}");

    let issued = api.issued();
    assert_eq!(issued.len(), 2);
    assert_eq!(
        issued[0].request,
        json!({ "repositories": ["app", "infra"],
        "permissions": { "contents": "write", "pull_requests": "write" } })
    );
    assert_eq!(issued[1].request, json!({ "repository_ids": [1296269], "permissions": { "contents": "read" } }));
    let requests = api.requests();
    let installation_lookups = requests.iter().filter(|(_, path)| path == "/orgs/octo-org/installation").count();
    assert_eq!(installation_lookups, 1, "the installation is cached: {requests:?}");
    assert!(requests.contains(&("POST".into(), format!("/app/installations/{INSTALLATION_ID}/access_tokens"))));

    let release = answer["credentials"].as_array().unwrap().iter().find(|c| c["role"] == "release-bot").unwrap();
    assert_eq!(release["backend"], "github");
    assert_eq!(release["github"]["repositories"], json!(["app", "infra"]));
    assert_eq!(release["github"]["permissions"], json!({ "contents": "write", "pull_requests": "write" }));
    assert_eq!(release["github"]["expires_at"], release["expires_at"], "the broker's revocation time");
    assert!(api.token_works(&token_of(&answer, "release-bot")).await);
    assert!(api.token_works(&token_of(&answer, "read-deps")).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn githubs_refusals_and_limits_reach_the_caller_with_githubs_message() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;

    let (status, answer, _) = exchange(&stack, &["unreachable-repo"]).await;
    assert_eq!((status, answer["error"].as_str()), (502, Some("backend_refused")), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("not accessible to the parent installation"), "{answer}");

    let (status, answer, _) = exchange(&stack, &["not-installed"]).await;
    assert_eq!((status, answer["error"].as_str()), (502, Some("backend_refused")), "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("Not Found"), "{answer}");

    api.set(Mode::RateLimited);
    let (status, answer, headers) = exchange(&stack, &["read-deps"]).await;
    assert_eq!((status, answer["error"].as_str()), (503, Some("backend_unavailable")), "{answer}");
    let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((100..=120).contains(&retry_after), "until x-ratelimit-reset: {retry_after}");
    assert!(api.issued().is_empty(), "nothing was minted");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_api_is_backend_unavailable_and_not_ready() {
    let api = GithubApi::start().await;
    let nowhere = format!("http://127.0.0.1:{}", crate::support::free_port());
    let stack = start(&nowhere, &api).await;
    let (status, answer, _) = exchange(&stack, &["read-deps"]).await;
    assert_eq!((status, answer["error"].as_str()), (503, Some("backend_unavailable")), "{answer}");
    let (status, body) = stack.broker.get_text("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("github"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_checks_that_the_app_authenticates() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (status, body) = stack.broker.get_text("/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert!(api.requests().contains(&("GET".into(), "/app".into())));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_jobs_end_by_webhook_or_self_revoke_kills_its_tokens_at_github() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (_, answer, _) = exchange(&stack, &["release-bot", "read-config"]).await;
    let token = token_of(&answer, "release-bot");
    assert!(api.token_works(&token).await);

    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, ended) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!((status, ended["revoked"].as_u64()), (200, Some(2)), "{ended}");
    wait_until("GitHub refuses the token", || async { !api.token_works(&token).await }).await;
    wait_until("the lease is revoked", || async {
        stack.leases("github", GITHUB_JOB).await.iter().all(|lease| lease.state == LeaseState::Revoked)
    })
    .await;

    // Another job (another check run) ends itself with its own token.
    let other_job = |claims: &mut Value| claims["check_run_id"] = "289782452".into();
    let job_token = github_token(&stack.github, other_job);
    let (status, answer) = stack.broker.exchange(&job_token, &json!({ "roles": ["read-deps"] })).await;
    assert_eq!(status, 200, "{answer}");
    let token = token_of(&answer, "read-deps");
    let revoked = stack
        .broker
        .http()
        .post(format!("{}/v1/jobs/self/revoke", stack.broker.url))
        .bearer_auth(&job_token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    wait_until("GitHub refuses the self-revoked job's token", || async { !api.token_works(&token).await }).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_max_ttl_below_githubs_hour_is_enforced_by_revoking_at_the_leases_expiry() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (status, answer, _) = exchange(&stack, &["brief-bot"]).await;
    assert_eq!(status, 200, "{answer}");
    let token = token_of(&answer, "brief-bot");
    assert!(api.token_works(&token).await);
    wait_until("GitHub refuses the token after the 2 s lease", || async { !api.token_works(&token).await }).await;
    wait_until("the lease ends revoked, not expired", || async {
        stack.leases("github", GITHUB_JOB).await.iter().any(|lease| lease.state == LeaseState::Revoked)
    })
    .await;
    assert!(api.requests().contains(&("DELETE".into(), "/installation/token".into())));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revocation_is_retried_while_github_is_down_and_confirmed_afterwards() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (_, answer, _) = exchange(&stack, &["release-bot"]).await;
    let token = token_of(&answer, "release-bot");
    api.set(Mode::Down);
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, _) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!(status, 200);
    wait_until("a revocation attempt failed", || async {
        api.requests().iter().filter(|(method, _)| method == "DELETE").count() >= 1
    })
    .await;
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert_eq!(leases[0].state, LeaseState::Revoking, "still owed: {leases:?}");

    api.set(Mode::Answer);
    wait_until("the retried revocation is confirmed", || async { !api.token_works(&token).await }).await;
    wait_until("the lease is revoked", || async {
        stack.leases("github", GITHUB_JOB).await.iter().all(|lease| lease.state == LeaseState::Revoked)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_is_absent_from_logs_audit_store_text_and_leases_list() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (_, answer, _) = exchange(&stack, &["release-bot"]).await;
    let token = token_of(&answer, "release-bot");
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    wait_until("GitHub refuses the token", || async { !api.token_works(&token).await }).await;

    let leases = stack.broker.cli(&["leases", "list", "--format", "json"]);
    let audit = std::fs::read_to_string(stack.broker.audit_path()).unwrap_or_default();
    let database = std::fs::read(stack.broker.database()).unwrap_or_default();
    let wal = std::fs::read(stack.broker.database().with_extension("db-wal")).unwrap_or_default();
    for (what, text) in [("logs", stack.broker.logs()), ("audit", audit.clone()), ("leases list", leases)] {
        assert!(!text.contains(&token), "{what} holds the token");
    }
    for (what, bytes) in [("database", database), ("WAL", wal)] {
        assert!(!bytes.windows(token.len()).any(|w| w == token.as_bytes()), "the {what} holds the token in clear");
    }
    assert!(audit.contains("token_sha256"), "the audit trail names the token by its hash");
}

#[tokio::test(flavor = "multi_thread")]
async fn ci_creds_get_exports_gh_token_for_gh_and_one_per_role() {
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let get = |roles: &'static str| {
        let broker = stack.broker.url.clone();
        let token = github_token(&stack.github, |_| {});
        async move {
            ci_creds(
                &["get", "--broker", &broker, "--audience", AUDIENCE, "--role", roles],
                &[("CI_CREDS_TOKEN", token)],
            )
            .await
        }
    };
    let one = get("read-deps").await;
    assert_eq!(one.status.code(), Some(0), "{}", err(&one));
    let minted: Vec<String> = api.issued().iter().map(|issued| issued.token.clone()).collect();
    assert_eq!(out(&one), format!("export GH_TOKEN={}\n", minted[0]));
    assert!(!out(&one).contains("GITHUB_TOKEN"), "the job's own token is left alone");

    let two = get("release-bot,read-deps").await;
    assert_eq!(two.status.code(), Some(0), "{}", err(&two));
    let minted: Vec<String> = api.issued().iter().skip(1).map(|issued| issued.token.clone()).collect();
    let text = out(&two);
    assert!(text.contains(&format!("export GH_TOKEN_RELEASE_BOT={}\n", minted[0])), "{text}");
    assert!(text.contains(&format!("export GH_TOKEN_READ_DEPS={}\n", minted[1])), "{text}");
    assert!(text.contains(&format!("export GH_TOKEN={}\n", minted[0])), "gh finds the first role's: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_lease_whose_revocation_is_owed_stays_owed_until_github_confirms() {
    // A lease that expires while its revocation is owed is never given up as expired: GitHub's
    // token would still work for the rest of its hour.
    let api = GithubApi::start().await;
    let stack = start(&api.url, &api).await;
    let (_, answer, _) = exchange(&stack, &["brief-bot"]).await;
    let token = token_of(&answer, "brief-bot");
    api.set(Mode::Down);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert_eq!(leases[0].state, LeaseState::Revoking, "owed, not expired: {leases:?}");
    api.set(Mode::Answer);
    wait_until("GitHub refuses the token", || async { !api.token_works(&token).await }).await;
}
