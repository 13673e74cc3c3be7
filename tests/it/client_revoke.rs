//! `ci-creds revoke`: the job's final always-run step ends the job and every credential it got.

use std::time::Duration;

use crate::support::ci_job::{TokenEndpoint, assert_no_secret, ci_creds, err, out};
use crate::support::stack::Stack;
use crate::support::{AUDIENCE, github_token};

#[tokio::test(flavor = "multi_thread")]
async fn revoke_ends_the_job_and_prints_how_many_credentials_went() {
    let stack = Stack::start().await;
    let live = stack.accessors(&github_token(&stack.github, |_| {}), &["deploy-prod", "read-config"]).await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let output = ci_creds(&["revoke", "--broker", &stack.broker.url, "--audience", AUDIENCE], &endpoint.env()).await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    assert!(out(&output).contains('2'), "reports the two revoked credentials: {}", out(&output));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
    assert_no_secret(&output, &endpoint.issued());

    let again = ci_creds(
        &["get", "--broker", &stack.broker.url, "--audience", AUDIENCE, "--role", "read-config"],
        &endpoint.env(),
    )
    .await;
    assert_eq!(again.status.code(), Some(4), "an ended job is refused: {}", err(&again));
    assert!(err(&again).contains("job_ended"), "{}", err(&again));
}
