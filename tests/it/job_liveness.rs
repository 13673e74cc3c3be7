//! At an exchange the broker asks the CI whether the job still runs, before any lease is
//! written: a running job gets its credentials, a finished one is ended and refused, and an
//! answer that settles neither is allowed or refused as `on_unavailable` says. Nothing the CI's
//! API answers badly is ever read as "ended" or as "running".

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::ci_api::{CiApi, JobAnswer};
use crate::support::github_api::{APP_ID, GithubApi};
use crate::support::stack::Stack;
use crate::support::{claims_for, github_token};

const ROLES: &str = r#"{"roles": ["read-config"]}"#;

fn roles() -> Value {
    serde_json::from_str(ROLES).unwrap()
}

/// A stack whose GitHub issuer's API is `api`, through the App.
async fn github_stack(api: &GithubApi, table: &str) -> Stack {
    let config = format!(
        "[ci_api.github]\napi_url = \"{}\"\napp_id = \"{APP_ID}\"\nprivate_key_env = \"TEST_CI_API_APP_KEY\"\ntimeout_seconds = 1\n{table}",
        api.url
    );
    Stack::start_with(&config, "", vec![("TEST_CI_API_APP_KEY", api.private_key_pem.clone())]).await
}

fn job_token(stack: &Stack, job_id: &str) -> String {
    github_token(&stack.github, |claims| claims["check_run_id"] = json!(job_id))
}

fn granted_liveness(stack: &Stack, job_id: &str) -> Vec<Value> {
    stack
        .broker
        .audit_events()
        .into_iter()
        .filter(|event| event["event"] == "exchange.granted" && event["job"]["job_id"] == job_id)
        .map(|event| event["ci_liveness"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_job_gets_its_credentials_and_one_answer_serves_its_concurrent_exchanges() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api, "").await;
    api.set_job("7001", JobAnswer::Status("in_progress"));
    for _ in 0..3 {
        let (status, answer) = stack.broker.exchange(&job_token(&stack, "7001"), &roles()).await;
        assert_eq!(status, 200, "{answer}");
    }
    assert_eq!(api.job_calls("7001"), 1, "a running answer is reused for the job's next exchanges");
    assert_eq!(granted_liveness(&stack, "7001"), vec![json!("running"); 3]);
    let token_requests: Vec<Value> = api.issued().into_iter().map(|issued| issued.request).collect();
    assert_eq!(
        token_requests,
        [json!({"permissions": {"actions": "read"}})],
        "the broker reads job status and nothing else"
    );
    let jobs: Value = serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap();
    let runner = &jobs.as_array().unwrap().iter().find(|job| job["job_id"] == "7001").unwrap()["runner"];
    assert_eq!(
        (&runner["name"], &runner["group"], &runner["source"]),
        (&json!("release-runner-5"), &json!("release"), &json!("ci_api"))
    );
    assert!(stack.broker.cli(&["jobs", "list"]).contains("release-runner-5 (5) via ci_api"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_app_s_installation_token_is_taken_anew_before_it_expires_and_its_expiry_is_a_metric() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api, "").await;
    // Four minutes to live: within the five the broker keeps in hand, so not used again.
    api.set_token_lifetime(Duration::from_secs(240));
    for (n, job_id) in ["7011", "7012"].into_iter().enumerate() {
        api.set_job(job_id, JobAnswer::Status("in_progress"));
        let (status, answer) = stack.broker.exchange(&job_token(&stack, job_id), &roles()).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(api.issued().len(), n + 1, "a token near its expiry is taken anew");
    }
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    let expiry: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("ci_creds_github_app_token_expiry_timestamp_seconds{installation="))
        .and_then(|rest| rest.split_once(' '))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or_else(|| panic!("no expiry gauge: {metrics}"));
    let now = ci_creds::clock::now() as f64;
    assert!((now + 200.0..=now + 240.0).contains(&expiry), "{expiry} against {now}");

    // An hour to live: the next jobs reuse it.
    api.set_token_lifetime(Duration::from_secs(3600));
    for job_id in ["7013", "7014", "7015"] {
        api.set_job(job_id, JobAnswer::Status("in_progress"));
        assert_eq!(stack.broker.exchange(&job_token(&stack, job_id), &roles()).await.0, 200);
    }
    assert_eq!(api.issued().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_the_ci_reports_finished_is_ended_and_gets_nothing() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api, "").await;
    api.set_job("7002", JobAnswer::Status("completed"));
    let (status, answer) = stack.broker.exchange(&job_token(&stack, "7002"), &roles()).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")), "{answer}");
    assert!(stack.leases("github", "7002").await.is_empty(), "no lease was written");
    let jobs = stack.broker.cli(&["jobs", "list", "--format", "json"]);
    let jobs: Value = serde_json::from_str(&jobs).unwrap();
    let job = jobs.as_array().unwrap().iter().find(|job| job["job_id"] == "7002").cloned().unwrap();
    assert_eq!((&job["state"], &job["ended_by"]), (&json!("ended"), &json!("ci_api:exchange")));
    let (status, _) = stack.broker.exchange(&job_token(&stack, "7002"), &roles()).await;
    assert_eq!(status, 409, "a fresh token of the ended job");
    let ended: Vec<Value> =
        stack.broker.audit_events().into_iter().filter(|event| event["event"] == "job.ended").collect();
    assert_eq!((ended.len(), &ended[0]["source"]), (1, &json!("exchange_check")), "ended once, not at every token");
}

#[tokio::test(flavor = "multi_thread")]
async fn whatever_the_ci_cannot_settle_is_refused_with_on_unavailable_refuse() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api, "on_unavailable = \"refuse\"\n").await;
    let cases = [
        ("7101", JobAnswer::Status("queued")),
        ("7102", JobAnswer::Status("waiting")),
        ("7103", JobAnswer::NotFound),
        ("7104", JobAnswer::ServerError),
        ("7105", JobAnswer::Slow(Duration::from_secs(4))),
        ("7106", JobAnswer::Malformed),
        ("7107", JobAnswer::Oversized),
    ];
    for (job, answer) in cases {
        api.set_job(job, answer.clone());
        let (status, body) = stack.broker.exchange(&job_token(&stack, job), &roles()).await;
        assert_eq!((status, body["error"].as_str()), (503, Some("ci_unavailable")), "{answer:?}: {body}");
        assert!(stack.leases("github", job).await.is_empty(), "{answer:?}: nothing written");
    }
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    let refused = r#"ci_creds_runner_refusals_total{reason="ci_unavailable"} 7"#;
    assert!(metrics.lines().any(|line| line == refused), "counted against the runner: {metrics}");
    // Nothing above ended a job: each may still exchange once the CI says it runs.
    api.set_job("7103", JobAnswer::Status("in_progress"));
    assert_eq!(stack.broker.exchange(&job_token(&stack, "7103"), &roles()).await.0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn whatever_the_ci_cannot_settle_is_allowed_and_recorded_with_on_unavailable_allow() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api, "on_unavailable = \"allow\"\n").await;
    for (job, answer) in [
        ("7201", JobAnswer::Status("queued")),
        ("7202", JobAnswer::NotFound),
        ("7203", JobAnswer::ServerError),
        ("7204", JobAnswer::Malformed),
    ] {
        api.set_job(job, answer.clone());
        let (status, body) = stack.broker.exchange(&job_token(&stack, job), &roles()).await;
        assert_eq!(status, 200, "{answer:?}: {body}");
        assert_eq!(granted_liveness(&stack, job), [json!("unknown")], "{answer:?}");
    }
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    assert!(
        metrics.lines().any(|line| line.starts_with("ci_creds_exchanges_liveness_unknown_total{issuer=\"github\"} 4")),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_api_is_not_called_again_until_its_reset() {
    let api = GithubApi::start().await;
    let stack = github_stack(&api, "on_unavailable = \"refuse\"\n").await;
    // A good answer that says the hour's requests are spent: used, then no call until the reset.
    api.set_job("7301", JobAnswer::Exhausted { reset_in_seconds: 600 });
    assert_eq!(stack.broker.exchange(&job_token(&stack, "7301"), &roles()).await.0, 200);
    api.set_job("7302", JobAnswer::Status("in_progress"));
    let (status, body) = stack.broker.exchange(&job_token(&stack, "7302"), &roles()).await;
    assert_eq!((status, body["error"].as_str()), (503, Some("ci_unavailable")));
    assert_eq!(api.job_calls("7302"), 0, "paused until x-ratelimit-reset");

    let api = GithubApi::start().await;
    let stack = github_stack(&api, "on_unavailable = \"refuse\"\n").await;
    api.set_job("7311", JobAnswer::TooManyRequests { retry_after_seconds: 120 });
    assert_eq!(stack.broker.exchange(&job_token(&stack, "7311"), &roles()).await.0, 503);
    api.set_job("7312", JobAnswer::Status("in_progress"));
    assert_eq!(stack.broker.exchange(&job_token(&stack, "7312"), &roles()).await.0, 503);
    assert_eq!(api.job_calls("7312"), 0, "paused for Retry-After");
    assert!(stack.broker.logs().contains("CI API rate limit reached"));
}

#[tokio::test(flavor = "multi_thread")]
async fn gitlab_and_buildkite_are_asked_with_their_read_tokens() {
    let gitlab = CiApi::gitlab().await;
    let buildkite = CiApi::buildkite().await;
    let config = format!(
        "[ci_api.gitlab]\napi_url = \"{}\"\ntoken_env = \"TEST_GITLAB_API_TOKEN\"\non_unavailable = \"refuse\"\n\n\
         [ci_api.buildkite]\napi_url = \"{}\"\ntoken_env = \"TEST_BUILDKITE_API_TOKEN\"\non_unavailable = \"refuse\"\n",
        gitlab.url, buildkite.url
    );
    let env =
        vec![("TEST_GITLAB_API_TOKEN", gitlab.token.clone()), ("TEST_BUILDKITE_API_TOKEN", buildkite.token.clone())];
    let stack = Stack::start_with(&config, "", env).await;
    let gitlab_token = |job: &str| {
        stack.gitlab.sign(&claims_for(&stack.gitlab, "gitlab-token-claims.json", |c| c["job_id"] = json!(job))).unwrap()
    };
    let buildkite_token = |job: &str| {
        stack
            .buildkite
            .sign(&claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| c["job_id"] = json!(job)))
            .unwrap()
    };

    gitlab.set_job("302", JobAnswer::Status("running"));
    gitlab.set_job("303", JobAnswer::Status("success"));
    assert_eq!(stack.broker.exchange(&gitlab_token("302"), &roles()).await.0, 200);
    let (status, answer) = stack.broker.exchange(&gitlab_token("303"), &roles()).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")));
    assert_eq!(gitlab.requests()[0], "/api/v4/projects/20/jobs/302", "the job's own project, by id");

    let running = "0184990a-477b-4fa8-9968-496074483cee";
    let passed = "0184990a-477b-4fa8-9968-4960744800ff";
    buildkite.set_job(running, JobAnswer::Status("running"));
    buildkite.set_job(passed, JobAnswer::Status("passed"));
    assert_eq!(stack.broker.exchange(&buildkite_token(running), &roles()).await.0, 200);
    let (status, answer) = stack.broker.exchange(&buildkite_token(passed), &roles()).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")));
    assert_eq!(
        buildkite.requests()[0],
        format!("/v2/organizations/acme-inc/pipelines/super-duper-app/builds/1/jobs/{running}")
    );

    let jobs = stack.broker.cli(&["jobs", "list"]);
    assert!(jobs.contains("release-runner-1 (1) via ci_api") && jobs.contains("acme-inc-linux-1"), "{jobs}");
}
