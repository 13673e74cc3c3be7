//! Azure Pipelines end to end, against a loopback Azure DevOps (`support::azure_devops`), OpenBao
//! and the broker: pipeline tokens pinned to their organisation although every organisation's
//! keys are one JWKS, the fixed audience accepted on an Azure issuer only, replays, and the build
//! API asked at every exchange (its unknown answer refuses); a config that would exchange without
//! asking refused at start. How a run's end reaches the broker (hooks, reconciliation):
//! `azure_pipelines_end.rs`.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::azure_devops::{
    AZURE_AUDIENCE, AzureDevOps, JOB, ORG, OTHER_ORG, Org, PROJECT, RUN, Run, SELF_HOSTED_POOL, SIBLING, TimelineJob,
};
use crate::support::stack::Stack;
use crate::support::{AUDIENCE, claims_for};

/// Roles for Azure pipelines, appended to the stack's policy: the fixtures' pipeline pinned by
/// organisation, project and definition ids, repository and ref.
pub const ROLES: &str = r#"  - name: azure-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - issuer: azure
        owner_id: "0ca3ddd9-f0b0-4635-a98c-5866526961b6"
        repository: octo-org/octo-repo
        ref: refs/heads/main
        claims: { prj_id: "271ef6f7-5998-4b0f-86fb-4b54d9129990", def_id: "12" }
  - name: azure-other-org
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - issuer: azure-other
        owner_id: "5e1f2a3b-7c4d-4e5f-8a9b-0c1d2e3f4a5b"
        claims: { def_id: "12" }
  - name: azure-single-use
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: azure, runner_tier: azure-agents }
  - name: azure-self-hosted
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: azure, runner_tier: azure-self-hosted }
"#;

/// A stack whose broker pins the fixtures' organisation as issuer `azure`, asks its build API,
/// and has `config` after (tables, or more `[[issuers]]` entries).
pub async fn stack(azure: &AzureDevOps, config: &str) -> Stack {
    let config = format!("{}{}{config}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    Stack::start_with_policy(None, &config, "", ROLES, azure.env()).await
}

pub async fn exchange(stack: &Stack, token: &str, roles: &[&str]) -> (u16, Value) {
    stack.broker.exchange(token, &json!({ "roles": roles })).await
}

/// Exchanges `token` for `roles`, naming attempt `attempt` of job `job` within its run, as
/// `ci-creds get` does from `SYSTEM_JOBID` and `SYSTEM_JOBATTEMPT`.
pub async fn exchange_job(stack: &Stack, token: &str, roles: &[&str], job: &str, attempt: u32) -> (u16, Value) {
    stack.broker.exchange(token, &json!({ "roles": roles, "job": { "id": job, "attempt": attempt } })).await
}

/// A job's id within run `run`.
pub fn job_id(run: u64, job: &str, attempt: u32) -> String {
    format!("{run}/{job}/{attempt}")
}

/// The error code and message of a refusal.
pub fn refusal(answer: &Value) -> (Option<&str>, &str) {
    (answer["error"].as_str(), answer["message"].as_str().unwrap_or_default())
}

pub fn events(stack: &Stack, name: &str) -> Vec<Value> {
    stack.broker.audit_events().into_iter().filter(|event| event["event"] == name).collect()
}

pub fn listed_job(stack: &Stack, job_id: &str) -> Value {
    let jobs: Value = serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap();
    jobs.as_array().unwrap().iter().find(|job| job["job_id"] == job_id).cloned().expect("the job is listed")
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_tokens_are_their_organisations_runs_under_the_fixed_audience() {
    let azure = AzureDevOps::start().await;
    let other_org = format!(
        "{}{}",
        azure.issuer_config("azure-other", OTHER_ORG, ""),
        azure.api_config("azure-other", OTHER_ORG, "")
    );
    let stack = stack(&azure, &other_org).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_run(OTHER_ORG, RUN, Run::InProgress);

    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!(status, 200, "{answer}");
    let granted = events(&stack, "exchange.granted");
    let job = &granted[0]["job"];
    // `azure-read` pins `owner_id`: the organisation.
    assert_eq!(
        (&job["job_id"], &job["run_id"], &job["repository"], &job["ref"]),
        (&json!("4711"), &json!("4711"), &json!("octo-org/octo-repo"), &json!("refs/heads/main")),
        "the job is the run: {job}"
    );
    assert_eq!(azure.calls(&format!("/{}/.well-known/openid-configuration", ORG.id)), 1, "{:?}", azure.requests());
    assert!(azure.calls("/.well-known/jwks") >= 1, "the shared JWKS: {:?}", azure.requests());

    // The other organisation's run of the same number is its own job, on its own issuer.
    let theirs = azure.token(OTHER_ORG, RUN, |_| {});
    let (status, answer) = exchange(&stack, &theirs, &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    let (status, answer) = exchange(&stack, &azure.token(OTHER_ORG, RUN, |_| {}), &["azure-other-org"]).await;
    assert_eq!(status, 200, "{answer}");
    // Asked once, on the other organisation's API: a running answer serves that run's exchanges
    // for a few seconds.
    assert_eq!(azure.build_calls(OTHER_ORG, RUN), 1, "{:?}", azure.requests());
    assert_eq!(azure.build_calls(ORG, RUN), 1, "{:?}", azure.requests());

    // Signed by the shared key, but naming another organisation than the issuer's.
    let crossed = azure.token(ORG, RUN, |claims| claims["org_id"] = json!(OTHER_ORG.id));
    let (status, answer) = exchange(&stack, &crossed, &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    assert!(refusal(&answer).1.contains("org_id"), "{answer}");
    // An organisation no issuer pins, whose tokens the same key signs.
    let stranger = Org { id: "9d8c7b6a-5f4e-4d3c-9b2a-1f0e9d8c7b6a", name: "stranger-org" };
    let (status, answer) = exchange(&stack, &azure.token(stranger, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("unknown_issuer")), "{answer}");

    // The Azure issuer wants Azure's audience; every other issuer keeps the broker's own.
    let own_audience = azure.token(ORG, RUN, |claims| claims["aud"] = json!(AUDIENCE));
    let (status, answer) = exchange(&stack, &own_audience, &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    let github = stack
        .github
        .sign(&claims_for(&stack.github, "github-token-claims.json", |claims| claims["aud"] = json!(AZURE_AUDIENCE)));
    let (status, answer) = exchange(&stack, &github.unwrap(), &["read-config"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    let github = stack.github.sign(&claims_for(&stack.github, "github-token-claims.json", |_| {})).unwrap();
    assert_eq!(exchange(&stack, &github, &["read-config"]).await.0, 200, "the broker's audience on GitHub");

    // The ids a rule pins are the token's: another pipeline, another project.
    for (claim, value) in [("def_id", "13"), ("prj_id", "8a2c0b5e-0000-4000-8000-000000000001")] {
        let token = azure.token(ORG, RUN, |claims| claims[claim] = json!(value));
        let (status, answer) = exchange(&stack, &token, &["azure-read"]).await;
        assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{claim}: {answer}");
        let reasons = answer["denied"][0]["reasons"].to_string();
        assert!(reasons.contains(claim), "{claim}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_token_is_exchanged_once() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, "").await;
    azure.set_run(ORG, RUN, Run::InProgress);
    let token = azure.token(ORG, RUN, |_| {});
    assert_eq!(exchange(&stack, &token, &["azure-read"]).await.0, 200);
    let (status, answer) = exchange(&stack, &token, &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("token_replayed")), "{answer}");
    let refused = events(&stack, "exchange.refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0]["reason"].as_str().unwrap().contains("already exchanged"), "{}", refused[0]);
    assert_eq!(refused[0]["token_sha256"], ci_creds::identity::token_sha256(&token));

    // Another job of the run asks with its own token (another `jti`).
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_exchange_needs_the_build_api_to_say_the_run_is_in_progress() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, "").await;

    // The API takes the PAT alone, as a Basic password.
    let anonymous = reqwest::get(format!("{}{}", azure.root, &azure.build_path(ORG, RUN)[1..])).await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);

    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!(status, 200, "{answer}");
    let asked: Vec<(String, u16, Option<String>)> = azure
        .requests()
        .into_iter()
        .filter(|seen| seen.target.contains("/_apis/"))
        .map(|seen| (seen.target, seen.status, seen.basic_user))
        .collect();
    let timeline = format!("/{}/{PROJECT}/_apis/build/builds/{RUN}/timeline?api-version=7.1", ORG.name);
    assert_eq!(
        asked,
        [
            (azure.build_path(ORG, RUN), 401, None),
            (azure.build_path(ORG, RUN), 200, Some(String::new())),
            (timeline, 200, Some(String::new())),
        ],
        "asked with the PAT and no user"
    );
    let runner = &listed_job(&stack, "4711")["runner"];
    assert_eq!((&runner["group"], &runner["source"]), (&json!("Azure Pipelines"), &json!("ci_api")), "{runner}");

    // Completed before the exchange: refused, nothing minted, and the run ended at once.
    azure.set_run(ORG, 4712, Run::Completed);
    let (status, answer) = exchange(&stack, &azure.token(ORG, 4712, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
    assert!(stack.leases("azure", "4712").await.is_empty(), "no lease was written");
    let job = listed_job(&stack, "4712");
    assert_eq!((&job["state"], &job["ended_by"]), (&json!("ended"), &json!("ci_api:exchange")));

    // Not started, an error, a run the API does not know, no answer in time: unknown, refused.
    azure.set_run(ORG, 4713, Run::Status("notStarted"));
    azure.set_run(ORG, 4714, Run::ServerError);
    azure.set_run(ORG, 4716, Run::Slow(Duration::from_secs(4)));
    for (run, what) in [(4713, "notStarted"), (4714, "500"), (4715, "404"), (4716, "timeout")] {
        let (status, answer) = exchange(&stack, &azure.token(ORG, run, |_| {}), &["azure-read"]).await;
        assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{what}: {answer}");
        assert!(stack.leases("azure", &run.to_string()).await.is_empty(), "{what}: no lease was written");
        assert_eq!(azure.build_calls(ORG, run), 1, "{what}");
    }
    let granted = events(&stack, "exchange.granted");
    assert_eq!(granted.len(), 1, "only the run in progress got credentials: {granted:?}");
    assert_eq!(granted[0]["ci_liveness"], "running", "{}", granted[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_rate_limited_api_is_not_asked_while_paused() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, "").await;
    azure.set_run(ORG, 4721, Run::TooManyRequests { retry_after_seconds: 120 });
    let (status, answer) = exchange(&stack, &azure.token(ORG, 4721, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    azure.set_run(ORG, 4722, Run::InProgress);
    let (status, answer) = exchange(&stack, &azure.token(ORG, 4722, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "paused, so unknown: {answer}");
    assert_eq!(azure.build_calls(ORG, 4722), 0, "paused for Retry-After: {:?}", azure.requests());
    assert_eq!(azure.build_calls(ORG, 4721), 1);
    assert!(stack.broker.logs().contains("CI API rate limit reached"));
    assert!(stack.leases("azure", "4722").await.is_empty());
}

const HEAD: &str = "listen = \"127.0.0.1:0\"\naudience = \"https://ci-creds.example\"\npolicy_dir = \"policy\"\n[store]\nurl = \"sqlite://ci-creds.db\"\n[vault]\naddress = \"http://127.0.0.1:1\"\ntoken_env = \"AZURE_CONFIG_TEST_TOKEN\"\n";
const POLICY: &str = "roles:\n  - name: r\n    backend: vault\n    max_ttl: 5m\n    vault: { policies: [p] }\n    allow:\n      - issuer: azure\n";

/// Runs `serve` on `config`; returns exit success and stderr.
fn serve(config: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policy")).unwrap();
    std::fs::write(dir.path().join("policy/roles.yaml"), POLICY).unwrap();
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ci-creds"))
        .args(["serve", "--check-config", "--config"])
        .arg(dir.path().join("config.toml"))
        .env("AZURE_CONFIG_TEST_TOKEN", "not-a-real-token")
        .env_remove("VAULT_TOKEN")
        .output()
        .unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn azure_pipelines_config_that_would_exchange_without_asking_the_build_api_is_refused() {
    let issuer = format!(
        "[[issuers]]\nname = \"azure\"\nkind = \"azure_pipelines\"\nissuer = \"https://vstoken.dev.azure.com/{}\"\n",
        ORG.id
    );
    let api = |extra: &str| {
        format!(
            "[ci_api.azure]\napi_url = \"https://dev.azure.com/octo-org\"\ntoken_env = \"AZURE_CONFIG_TEST_TOKEN\"\n{extra}\n"
        )
    };
    let cases = [
        ("no [ci_api]", format!("{HEAD}{issuer}"), "ci_api.azure"),
        ("liveness check off", format!("{HEAD}{issuer}{}", api("check_running = false")), "ci_api.azure.check_running"),
        (
            "unknown answer allowed",
            format!("{HEAD}{issuer}{}", api("on_unavailable = \"allow\"")),
            "ci_api.azure.on_unavailable",
        ),
        ("a user beside the PAT", format!("{HEAD}{issuer}{}", api("user = \"me\"")), "ci_api.azure.user"),
    ];
    for (what, config, key) in cases {
        let (ok, stderr) = serve(&config);
        assert!(!ok, "{what}: must exit non-zero");
        assert!(stderr.contains(key), "{what}: stderr names `{key}`: {stderr}");
    }
    // `on_unavailable = "refuse"` spelled out is the default, and fine: it fails only on Vault.
    let (ok, stderr) = serve(&format!("{HEAD}{issuer}{}", api("on_unavailable = \"refuse\"")));
    assert!(!ok && !stderr.contains("ci_api"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_named_job_is_bound_only_while_the_timeline_shows_that_attempt_running() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure, "").await;
    azure.set_run(ORG, RUN, Run::InProgress);
    let named = |job: &'static str, attempt: u32| {
        let token = azure.token(ORG, RUN, |_| {});
        let stack = &stack;
        async move { exchange_job(stack, &token, &["azure-read"], job, attempt).await }
    };

    // Not in the timeline yet, then waiting for an agent: unknown, and Azure's unknown refuses.
    let (status, answer) = named(JOB, 1).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "pending", None));
    let (status, answer) = named(JOB, 1).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    assert_eq!(azure.timeline_calls(ORG, RUN), 2, "{:?}", azure.requests());

    // Running: bound to that attempt of that job, its agent the record's.
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = named(JOB, 1).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["job"]["job_id"], job_id(RUN, JOB, 1));
    let granted = events(&stack, "exchange.granted");
    assert_eq!(
        (&granted[0]["job"]["job_id"], &granted[0]["job"]["run_id"]),
        (&json!(job_id(RUN, JOB, 1)), &json!("4711"))
    );
    assert_eq!(listed_job(&stack, &job_id(RUN, JOB, 1))["runner"]["name"], "Azure Pipelines 1");
    // An attempt the timeline does not show running is not this one.
    let (status, answer) = named(JOB, 2).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");

    // A job the timeline shows completed has ended: refused, and remembered as ended.
    azure.set_job(ORG, RUN, TimelineJob::new(SIBLING, "completed", Some("Azure Pipelines 2")));
    let (status, answer) = named(SIBLING, 1).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
    assert_eq!(listed_job(&stack, &job_id(RUN, SIBLING, 1))["ended_by"], "ci_api:exchange");
    // Without a named job, the run is bound as before.
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!((status, &answer["job"]["job_id"]), (200, &json!("4711")), "{answer}");

    // A job that is not one is refused before anything is asked.
    let asked = azure.requests().len();
    for job in [
        json!({ "id": "__default", "attempt": 1 }),
        json!({ "id": JOB, "attempt": 0 }),
        json!({ "id": JOB, "attempt": 1001 }),
        json!({ "id": JOB }),
        json!({ "id": JOB, "attempt": 1, "stage": "Build" }),
        json!(JOB),
    ] {
        let body = json!({ "roles": ["azure-read"], "job": job });
        let (status, answer) = stack.broker.exchange(&azure.token(ORG, RUN, |_| {}), &body).await;
        assert_eq!((status, refusal(&answer).0), (400, Some("invalid_request")), "{job}: {answer}");
        assert!(!refusal(&answer).1.contains("__default"), "the value is not echoed: {answer}");
    }
    assert_eq!(azure.requests().len(), asked, "{:?}", azure.requests());
    // Another CI's token names its job itself.
    let github = stack.github.sign(&claims_for(&stack.github, "github-token-claims.json", |_| {})).unwrap();
    let (status, answer) = exchange_job(&stack, &github, &["read-config"], JOB, 1).await;
    assert_eq!((status, refusal(&answer).0), (400, Some("invalid_request")), "{answer}");
    assert!(refusal(&answer).1.contains("Azure Pipelines"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_single_use_agents_serve_one_job() {
    let azure = AzureDevOps::start().await;
    let tiers = "  - name: azure-agents\n    single_use: true\n    match: { issuer: azure, runner_group: \"Azure Pipelines\" }\n";
    let config = format!("{}{}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    let stack = Stack::start_with_policy(None, &config, tiers, ROLES, azure.env()).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let token = azure.token(ORG, RUN, |_| {});
    let (status, answer) = exchange_job(&stack, &token, &["azure-single-use"], JOB, 1).await;
    assert_eq!(status, 200, "{answer}");

    // Another job of the run on the same agent of the same pool.
    azure.set_job(ORG, RUN, TimelineJob::new(SIBLING, "inProgress", Some("Azure Pipelines 1")));
    let token = azure.token(ORG, RUN, |_| {});
    let (status, answer) = exchange_job(&stack, &token, &["azure-single-use"], SIBLING, 1).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("runner_reused")), "{answer}");
    assert!(refusal(&answer).1.contains("Azure Pipelines/Azure Pipelines 1"), "pool and agent: {answer}");
    let reused = events(&stack, "runner.reused");
    assert_eq!(
        (&reused[0]["runner_key"], &reused[0]["first_job_id"]),
        (&json!("Azure Pipelines/Azure Pipelines 1"), &json!(job_id(RUN, JOB, 1)))
    );

    // A fresh agent serves its first job; a run-bound exchange has no known agent; a job in
    // another queue than the run's has no known pool, so no tier.
    let third = "0a6cf2b5-8cde-5e7e-8a43-7b5a0b6c1d2e";
    azure.set_job(ORG, RUN, TimelineJob::new(third, "inProgress", Some("Azure Pipelines 2")));
    let (status, answer) = exchange_job(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-single-use"], third, 1).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-single-use"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("runner_unknown")), "{answer}");
    // The pool is known; the agent, named only by a job's record, is the fact it lacks.
    assert!(
        refusal(&answer).1.contains(
            "this job's runner_name is unknown: the exchange named no job within the run, and Azure Pipelines names an agent only for a job"
        ),
        "{answer}"
    );
    let elsewhere = "7f1e2d3c-4b5a-5968-8776-655443322110";
    azure.set_job(
        ORG,
        RUN,
        TimelineJob { queue_id: Some(4800), ..TimelineJob::new(elsewhere, "inProgress", Some("linux-1")) },
    );
    let token = azure.token(ORG, RUN, |_| {});
    let (status, answer) = exchange_job(&stack, &token, &["azure-single-use"], elsewhere, 1).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");

    // The fleet report counts the agents, keyed by pool and name.
    let mut report = Value::Null;
    for _ in 0..100 {
        report = serde_json::from_str(&stack.broker.cli(&["runners", "report", "--format", "json"])).unwrap();
        if report["summary"]["jobs"] == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let runners = report["runners"].as_array().unwrap();
    let agent = |key: &str| runners.iter().find(|runner| runner["key"] == key).cloned().unwrap_or(Value::Null);
    let first = agent("Azure Pipelines/Azure Pipelines 1");
    assert_eq!((&first["issuer"], &first["reused"]), (&json!("azure"), &json!(true)), "{report}");
    assert_eq!(agent("Azure Pipelines/Azure Pipelines 2")["single_use"], json!(true), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_self_hosted_pools_are_self_hosted_runners() {
    let azure = AzureDevOps::start().await;
    let tiers = "  - name: azure-self-hosted\n    match: { issuer: azure, runner_environment: self-hosted }\n";
    let config = format!("{}{}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    let stack = Stack::start_with_policy(None, &config, tiers, ROLES, azure.env()).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_pool(ORG, RUN, SELF_HOSTED_POOL);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("linux-agent-1")));

    // The token says nothing of the agent: the build API's pool puts the run and its job in the tier.
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-self-hosted"]).await;
    assert_eq!(status, 200, "{answer}");
    let token = azure.token(ORG, RUN, |_| {});
    let (status, answer) = exchange_job(&stack, &token, &["azure-self-hosted"], JOB, 1).await;
    assert_eq!(status, 200, "{answer}");
    let granted = events(&stack, "exchange.granted");
    assert_eq!(granted.len(), 2, "{granted:?}");
    assert!(granted.iter().all(|event| event["job"]["runner_environment"] == "self-hosted"), "{granted:?}");
    let runner = &listed_job(&stack, &job_id(RUN, JOB, 1))["runner"];
    assert_eq!(
        (&runner["environment"], &runner["runner_type"], &runner["name"]),
        (&json!("self-hosted"), &json!("self-hosted"), &json!("linux-agent-1")),
        "{runner}"
    );

    // A run on Microsoft's hosted pool is in no such tier.
    azure.set_run(ORG, 4712, Run::InProgress);
    azure.set_job(ORG, 4712, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = exchange(&stack, &azure.token(ORG, 4712, |_| {}), &["azure-self-hosted"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert!(answer["denied"][0]["reasons"].to_string().contains("runner_tier"), "{answer}");
    let refused = events(&stack, "exchange.refused");
    assert_eq!(refused[0]["job"]["runner_environment"], "microsoft-hosted", "{refused:?}");

    // The fleet report counts the pool's jobs as self-hosted, and its agent among self-hosted runners.
    let mut report = Value::Null;
    for _ in 0..100 {
        report = serde_json::from_str(&stack.broker.cli(&["runners", "report", "--format", "json"])).unwrap();
        if report["summary"]["jobs"] == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        (&report["summary"]["jobs"], &report["summary"]["self_hosted_jobs"]),
        (&json!(3), &json!(2)),
        "{report}"
    );
    let listed: Value =
        serde_json::from_str(&stack.broker.cli(&["runners", "list", "--self-hosted", "--format", "json"])).unwrap();
    let keys: Vec<&Value> = listed.as_array().unwrap().iter().map(|runner| &runner["key"]).collect();
    assert!(keys.contains(&&json!("linux-pool/linux-agent-1")), "{listed}");
}
