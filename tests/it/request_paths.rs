//! The paths the broker asks GitHub's API for, exactly as written on the wire: each segment
//! escaped only as a path segment needs (RFC 3986 §2.3 leaves letters, digits, `-`, `.`, `_` and
//! `~` as they are), so a strict proxy in front of GitHub Enterprise sees the path GitHub expects.

use std::time::Duration;

use ci_creds::ci::GithubApp;
use secrecy::SecretString;
use serde_json::json;

use crate::support::ci_api::JobAnswer;
use crate::support::github_api::{APP_ID, GithubApi};
use crate::support::github_token;
use crate::support::stack::Stack;

#[tokio::test(flavor = "multi_thread")]
async fn the_app_asks_for_installations_with_unreserved_characters_as_they_are() {
    let api = GithubApi::start().await;
    let key = SecretString::from(api.private_key_pem.clone());
    let app = GithubApp::new(&api.url, APP_ID, &key, Duration::from_secs(5)).unwrap();
    app.installation("octo-org").await.expect("the App is installed on octo-org");
    for repository in ["octo-org/octo.repo_v2~x", "octo-org/a b%c"] {
        let _ = app.repository_installation(repository).await;
    }
    // However it were encoded, a URL parser reads a `..` segment as climbing the path.
    assert!(app.repository_installation("octo-org/..").await.is_err());
    assert_eq!(
        api.raw_paths(),
        [
            "/orgs/octo-org/installation",
            "/repos/octo-org/octo.repo_v2~x/installation",
            "/repos/octo-org/a%20b%25c/installation",
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exchange_asks_for_the_job_at_the_path_github_documents() {
    let api = GithubApi::start().await;
    let config = format!(
        "[ci_api.github]\napi_url = \"{}\"\napp_id = \"{APP_ID}\"\nprivate_key_env = \"TEST_CI_API_APP_KEY\"\n",
        api.url
    );
    let stack = Stack::start_with(&config, "", vec![("TEST_CI_API_APP_KEY", api.private_key_pem.clone())]).await;
    api.set_job("7060", JobAnswer::Status("in_progress"));
    let token = github_token(&stack.github, |claims| claims["check_run_id"] = json!("7060"));
    let (status, answer) = stack.broker.exchange(&token, &json!({"roles": ["read-config"]})).await;
    assert_eq!(status, 200, "{answer}");
    let paths = api.raw_paths();
    assert!(paths.contains(&"/repos/octo-org/octo-repo/installation".to_owned()), "{paths:?}");
    assert!(paths.contains(&"/repos/octo-org/octo-repo/actions/jobs/7060".to_owned()), "{paths:?}");
}
