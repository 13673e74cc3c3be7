//! What Jenkins itself tells over what a controller's templates claim: the agent a build runs on
//! from the computer API rather than a `node_name` claim, and the controller a custom "Issuer
//! URI" hides named by `controller_url`.

use serde_json::json;

use crate::jenkins::{exchange, refusal};
use crate::support::jenkins::{AGENT, BUILD, Build, Jenkins, MAIN};
use crate::support::stack::Stack;

const AGENT_ROLES: &str = r#"  - name: on-the-agent
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo, runner_name: linux-agent-1 }
  - name: on-the-release-agent
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo, runner_name: release-agent }
"#;

/// The broker on `jenkins`, with its API configured or not.
async fn agent_stack(jenkins: &Jenkins, api: bool) -> Stack {
    let api = if api { jenkins.api_config("") } else { String::new() };
    let config = format!("{}{api}", jenkins.issuer_config(""));
    Stack::start_with_policy(None, &config, "", AGENT_ROLES, jenkins.env()).await
}

/// A token whose `${NODE_NAME}` template claims the release agent, as a Pipeline's token may
/// name a node other than the one its `withCredentials` runs on.
fn claiming_release_agent(jenkins: &Jenkins, number: u64) -> String {
    jenkins.token(MAIN, number, |claims| claims["node_name"] = json!("release-agent"))
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_with_the_api_the_agent_running_the_build_wins_over_the_node_name_claim() {
    let jenkins = Jenkins::start().await;
    let stack = agent_stack(&jenkins, true).await;
    jenkins.set_build(MAIN, BUILD, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &claiming_release_agent(&jenkins, BUILD), &["on-the-release-agent"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    let reasons = answer["denied"][0]["reasons"].to_string();
    assert!(reasons.contains("runner_name: linux-agent-1"), "{answer}");

    // A build no executor runs yet has no agent, whatever it claims.
    jenkins.set_build(MAIN, 43, Build::Running { agent: None });
    let (status, answer) = exchange(&stack, &claiming_release_agent(&jenkins, 43), &["on-the-release-agent"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    jenkins.set_build(MAIN, 44, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &claiming_release_agent(&jenkins, 44), &["on-the-agent"]).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_without_the_api_the_node_name_claim_is_the_agent() {
    let jenkins = Jenkins::start().await;
    let stack = agent_stack(&jenkins, false).await;
    let (status, answer) = exchange(&stack, &claiming_release_agent(&jenkins, BUILD), &["on-the-release-agent"]).await;
    assert_eq!(status, 200, "{answer}");
}

const CUSTOM_ISSUER: &str = "https://oidc.example.com/jenkins";

/// The broker pinning the plugin's custom Issuer URI, its keys at the controller's JWKS, with
/// `controller` as `controller_url` (none when `None`), and the Jenkins API.
async fn custom_issuer_stack(jenkins: &Jenkins, controller: Option<&str>) -> Stack {
    let controller = controller.map(|root| format!("controller_url = \"{root}\"")).unwrap_or_default();
    let issuer = format!(
        "\n[[issuers]]\nname = \"jenkins\"\nkind = \"jenkins\"\nissuer = \"{CUSTOM_ISSUER}\"\njwks_url = \"{}/jwks\"\n{controller}\n",
        jenkins.issuer
    );
    let config = format!("{issuer}{}", jenkins.api_config(""));
    Stack::start_with_policy(None, &config, "", AGENT_ROLES, jenkins.env()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_a_custom_issuer_uri_names_its_controller_by_controller_url() {
    let jenkins = Jenkins::start().await;
    jenkins.set_build(MAIN, BUILD, Build::Running { agent: Some(AGENT) });
    let custom = |job: &str, later: i64| {
        jenkins.token(job, BUILD, |claims| {
            claims["iss"] = json!(CUSTOM_ISSUER);
            claims["iat"] = json!(claims["iat"].as_i64().unwrap() + later);
        })
    };

    let stack = custom_issuer_stack(&jenkins, Some(&jenkins.root)).await;
    let (status, answer) = exchange(&stack, &custom(MAIN, 0), &["on-the-agent"]).await;
    assert_eq!(status, 200, "{answer}");
    assert!(jenkins.calls(&format!("/{MAIN}{BUILD}/api/json")) > 0, "the build API is asked at the controller");

    // A job URL on another host is no job of the controller, whatever the issuer signed.
    let elsewhere = jenkins.token(MAIN, BUILD, |claims| {
        claims["iss"] = json!(CUSTOM_ISSUER);
        claims["sub"] = json!("https://jenkins.evil.example/job/octo-org/job/octo-repo/job/main/");
    });
    let (status, answer) = exchange(&stack, &elsewhere, &["on-the-agent"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    assert!(refusal(&answer).1.contains("`sub` is not the URL of a job below"), "{answer}");

    // Without `controller_url` the custom issuer says nothing of a controller: refused, saying so.
    let stack = custom_issuer_stack(&jenkins, None).await;
    let (status, answer) = exchange(&stack, &custom(MAIN, 1), &["on-the-agent"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    assert!(refusal(&answer).1.contains("controller_url"), "{answer}");
}
