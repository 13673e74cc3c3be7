//! A webhook secret mounted from a file (a Kubernetes Secret, `echo secret > file`) ends in a
//! newline that is not part of the secret: the broker drops that one newline, so the CI's
//! signatures verify, and refuses any other whitespace around a secret at start, naming it.

use serde_json::json;

use crate::support::broker::GITHUB_WEBHOOK_SECRET;
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{fixture, github_token};

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_read_with_its_trailing_newline_still_verifies_the_ci_s_signature() {
    let from_file = vec![("TEST_GITHUB_WEBHOOK_SECRET", format!("{GITHUB_WEBHOOK_SECRET}\n"))];
    let stack = Stack::start_with("", "", from_file).await;
    let (status, _) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 200);
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-nl"), delivery).await;
    assert_eq!((status, &answer["revoked"]), (200, &json!(1)), "{answer}");
}
