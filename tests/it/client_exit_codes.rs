//! `ci-creds get`'s exit codes, each caused for real: no token (3), refusals by the broker (4),
//! an unreachable or failing broker (5, after retries with fresh tokens), usage (2).

use crate::support::ci_job::{Proxy, TokenEndpoint, assert_no_secret, ci_creds, err, out};
use crate::support::stack::Stack;
use crate::support::{AUDIENCE, free_port, github_token};

const FAST_RETRY: &str = "50ms";

#[tokio::test(flavor = "multi_thread")]
async fn no_token_exits_3_naming_what_was_looked_for() {
    let output = ci_creds(&["get", "--broker", "http://127.0.0.1:9", "--role", "deploy-prod"], &[]).await;
    assert_eq!(output.status.code(), Some(3));
    let stderr = err(&output);
    for looked_for in [
        "--token-file",
        "$ACTIONS_ID_TOKEN_REQUEST_URL",
        "$CI_CREDS_ID_TOKEN",
        "$BUILDKITE_AGENT_ACCESS_TOKEN",
        "$CIRCLE_OIDC_TOKEN_V2",
        "$CI_CREDS_TOKEN",
    ] {
        assert!(stderr.contains(looked_for), "{looked_for}: {stderr}");
    }
    let missing_file =
        ci_creds(&["get", "--broker", "http://127.0.0.1:9", "--role", "r", "--token-file", "/nonexistent/token"], &[])
            .await;
    assert_eq!(missing_file.status.code(), Some(3));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_role_exits_4_with_the_code_and_the_reasons() {
    let stack = Stack::start().await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |claims| {
        claims["ref"] = "refs/heads/dev".into();
    })
    .await;
    let output = ci_creds(
        &[
            "get",
            "--broker",
            &stack.broker.url,
            "--audience",
            AUDIENCE,
            "--role",
            "deploy-prod",
            "--retry-delay",
            FAST_RETRY,
        ],
        &endpoint.env(),
    )
    .await;
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(out(&output), "");
    let stderr = err(&output);
    assert!(stderr.contains("the broker refused: HTTP 403 access_denied:"), "{stderr}");
    assert!(stderr.contains("\n  deploy-prod: ref: refs/heads/dev is not one of the allowed values"), "{stderr}");
    assert_eq!(endpoint.issued().len(), 1, "a refusal is not retried");
    assert_no_secret(&output, &endpoint.issued());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_audience_is_the_broker_url_and_a_wrong_one_exits_4() {
    let stack = Stack::start().await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let output = ci_creds(&["get", "--broker", &stack.broker.url, "--role", "deploy-prod"], &endpoint.env()).await;
    assert_eq!(endpoint.audiences(), [stack.broker.url.as_str()]);
    assert_eq!(output.status.code(), Some(4));
    assert!(err(&output).contains("HTTP 401 invalid_token"), "{}", err(&output));
    assert_no_secret(&output, &endpoint.issued());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_token_exits_4() {
    let stack = Stack::start().await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    let ci_token = github_token(&stack.github, |_| {});
    std::fs::write(&token_file, format!("{ci_token}\n")).unwrap();
    let args = [
        "get",
        "--broker",
        &stack.broker.url,
        "--audience",
        AUDIENCE,
        "--role",
        "read-config",
        "--token-file",
        token_file.to_str().unwrap(),
    ];
    let first = ci_creds(&args, &[]).await;
    assert_eq!(first.status.code(), Some(0), "{}", err(&first));
    let second = ci_creds(&args, &[]).await;
    assert_eq!(second.status.code(), Some(4));
    assert!(err(&second).contains("HTTP 409 token_replayed"), "{}", err(&second));
    assert_no_secret(&second, &[ci_token]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_broker_exits_5_after_3_retries_each_with_a_fresh_token() {
    let stack = Stack::start().await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let output = ci_creds(
        &["get", "--broker", &nowhere, "--audience", AUDIENCE, "--role", "deploy-prod", "--retry-delay", FAST_RETRY],
        &endpoint.env(),
    )
    .await;
    assert_eq!(output.status.code(), Some(5));
    let issued = endpoint.issued();
    assert_eq!(issued.len(), 4, "the first attempt and 3 retries");
    assert!(issued.windows(2).all(|w| w[0] != w[1]), "each a fresh token");
    let stderr = err(&output);
    assert!(stderr.contains("is unavailable after 4 attempts: cannot connect"), "{stderr}");
    assert_eq!(stderr.matches("with a fresh CI token (attempt").count(), 3, "{stderr}");
    assert_no_secret(&output, &issued);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_backend_exits_5() {
    let mut stack = Stack::start().await;
    stack.bao.stop();
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let output = ci_creds(
        &[
            "get",
            "--broker",
            &stack.broker.url,
            "--audience",
            AUDIENCE,
            "--role",
            "deploy-prod",
            "--retry-delay",
            FAST_RETRY,
        ],
        &endpoint.env(),
    )
    .await;
    assert_eq!(output.status.code(), Some(5));
    assert!(err(&output).contains("HTTP 503 backend_unavailable"), "{}", err(&output));
    assert_eq!(endpoint.issued().len(), 4);
    assert_no_secret(&output, &endpoint.issued());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_after_a_lost_answer_uses_a_fresh_token_and_is_not_a_replay() {
    let stack = Stack::start().await;
    let proxy = Proxy::start(&stack.broker.url, 1).await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let output = ci_creds(
        &["get", "--broker", &proxy.url, "--audience", AUDIENCE, "--role", "read-config", "--retry-delay", FAST_RETRY],
        &endpoint.env(),
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    assert_eq!(proxy.requests(), 2, "the broker served both attempts");
    assert_eq!(endpoint.issued().len(), 2);
    assert!(out(&output).contains("export VAULT_TOKEN="));
    let leases = stack.leases("github", "289782451").await;
    assert_eq!(leases.len(), 2, "the lost answer's lease exists too, revocable with the job");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_token_that_cannot_be_refreshed_exits_5_saying_why() {
    let stack = Stack::start().await;
    let proxy = Proxy::start(&stack.broker.url, 1).await;
    let ci_token = github_token(&stack.github, |_| {});
    let output = ci_creds(
        &["get", "--broker", &proxy.url, "--audience", AUDIENCE, "--role", "read-config", "--retry-delay", FAST_RETRY],
        &[("CI_CREDS_TOKEN", ci_token.clone())],
    )
    .await;
    assert_eq!(output.status.code(), Some(5));
    assert!(
        err(&output).contains("the retry was refused as a replay because $CI_CREDS_TOKEN cannot give a fresh token"),
        "{}",
        err(&output)
    );
    assert_no_secret(&output, &[ci_token]);
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_errors_exit_2_before_any_token_is_fetched() {
    let token = [("CI_CREDS_TOKEN", "not-used".to_owned())];
    let cases: [&[&str]; 4] = [
        &["get", "--broker", "http://127.0.0.1:9", "--role", "r", "--format", "github"],
        &["get", "--broker", "http://broker.example", "--role", "r"],
        &["get", "--broker", "http://127.0.0.1:9"],
        &["get", "--broker", "http://127.0.0.1:9", "--role", "r", "--format", "yaml"],
    ];
    for args in cases {
        let output = ci_creds(args, &token).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", err(&output));
    }
    let help = ci_creds(&["get", "--help"], &[]).await;
    for code in ["0  ok", "2  usage", "3  no CI token", "4  refused", "5  broker unreachable"] {
        assert!(out(&help).contains(code), "{code}: {}", out(&help));
    }
}
