//! Jenkins builds whose kind the controller's templates cannot tell: a template the build did not
//! fill, and the branch, tag or change request a multibranch build runs for, from the build API.

use serde_json::{Value, json};

use crate::jenkins::{exchange, refusal, stack};
use crate::support::jenkins::{AGENT, BUILD, Build, Jenkins, MAIN};
use crate::support::stack::Stack;

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_a_token_holding_an_unfilled_template_is_refused_naming_the_claim() {
    let jenkins = Jenkins::start().await;
    let stack = stack(&jenkins, "", "", "").await;
    // What a plugin release before b53c1f7 signs for a branch build under a `${CHANGE_ID}` template.
    let token = jenkins.token(MAIN, BUILD, |claims| claims["change_id"] = json!("${CHANGE_ID}"));
    let (status, answer) = exchange(&stack, &token, &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("unsubstituted_claim")), "{answer}");
    let message = refusal(&answer).1;
    assert!(message.contains("`change_id`") && message.contains("does not set"), "{answer}");
    let refused = stack.broker.audit_events().into_iter().find(|event| event["event"] == "exchange.refused");
    assert!(refused.is_some_and(|event| event["reason"].as_str().unwrap().contains("`change_id`")));

    // The same build's token with only the templates every build fills is granted.
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, |_| {}), &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");
}

/// Roles judging what a Jenkins build runs for.
const HEAD_ROLES: &str = r#"  - name: heads-main
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo, ref: refs/heads/main, ref_type: branch }
  - name: heads-release-branches
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, ref: "glob:refs/heads/release-*" }
  - name: heads-release-tags
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo, ref: "glob:refs/tags/release-*", ref_type: tag }
  - name: heads-repository
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo }
  - name: heads-change-requests
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo, event: [change_request] }
"#;

const TAG_JOB: &str = "job/octo-org/job/octo-repo/job/release-1.2/";
const CHANGE_JOB: &str = "job/octo-org/job/octo-repo/job/PR-7/";
const FREESTYLE: &str = "job/deploy/";

/// The broker with `[ci_api.jenkins]` on the controller (or without it), and `HEAD_ROLES`.
async fn with_api(jenkins: &Jenkins, api: bool) -> Stack {
    let api = if api { jenkins.api_config("") } else { String::new() };
    let config = format!("{}{api}", jenkins.issuer_config(""));
    Stack::start_with_policy(None, &config, "", HEAD_ROLES, jenkins.env()).await
}

/// A token with only the templates every build fills: `sub`, `build_number`, `build_url`.
fn plain(claims: &mut Value) {
    let claims = claims.as_object_mut().unwrap();
    claims.remove("branch");
    claims.remove("commit");
}

fn granted_job(stack: &Stack) -> Value {
    let events = stack.broker.audit_events().into_iter();
    events.filter(|event| event["event"] == "exchange.granted").map(|event| event["job"].clone()).next_back().unwrap()
}

fn reasons(answer: &Value) -> Vec<String> {
    let reasons = answer["denied"][0]["reasons"].as_array().cloned().unwrap_or_default();
    reasons.into_iter().filter_map(|reason| reason.as_str().map(str::to_owned)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_with_the_api_a_branch_build_gets_its_project_and_branch_from_jenkins() {
    let jenkins = Jenkins::start().await;
    let stack = with_api(&jenkins, true).await;
    jenkins.set_build(MAIN, BUILD, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, plain), &["heads-main"]).await;
    assert_eq!(status, 200, "{answer}");
    let job = granted_job(&stack);
    assert_eq!((&job["repository"], &job["ref"]), (&json!("octo-org/octo-repo"), &json!("refs/heads/main")));
    let asked = format!(
        "/{MAIN}{BUILD}/api/json?tree=number,url,building,result,actions[revision[head[name,id,origin[name]]]]"
    );
    assert!(jenkins.requests().iter().any(|seen| seen.target == asked), "{:?}", jenkins.requests());

    // A branch claim that disagrees with the head Jenkins names is refused.
    jenkins.set_head(MAIN, 43, "jenkins-api-build-tag.json");
    jenkins.set_build(MAIN, 43, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 43, |_| {}), &["heads-repository"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    assert!(refusal(&answer).1.contains("SCM head `release-1.2`"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_with_the_api_a_tag_build_is_a_tag_and_no_branch_rule_takes_it() {
    let jenkins = Jenkins::start().await;
    let stack = with_api(&jenkins, true).await;
    jenkins.set_build(TAG_JOB, 3, Build::Running { agent: Some(AGENT) });
    jenkins.set_head(TAG_JOB, 3, "jenkins-api-build-tag.json");
    // `BRANCH_NAME` is the tag's name in a tag build: the claim alone would say `refs/heads/`.
    let tag = |later: i64| {
        jenkins.token(TAG_JOB, 3, |claims| {
            claims["branch"] = json!("release-1.2");
            claims["iat"] = json!(claims["iat"].as_i64().unwrap() + later);
        })
    };
    let (status, answer) = exchange(&stack, &tag(0), &["heads-release-branches"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert_eq!(reasons(&answer), ["ref: refs/tags/release-1.2 is not one of the allowed values"]);
    let (status, answer) = exchange(&stack, &tag(1), &["heads-release-tags"]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(granted_job(&stack)["ref"], json!("refs/tags/release-1.2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_with_the_api_a_change_request_from_a_fork_needs_a_rule_naming_it_and_its_fork_is_told() {
    let jenkins = Jenkins::start().await;
    let stack = with_api(&jenkins, true).await;
    jenkins.set_build(CHANGE_JOB, 5, Build::Running { agent: Some(AGENT) });
    jenkins.set_head(CHANGE_JOB, 5, "jenkins-api-build-change-request-fork.json");
    // No `CHANGE_ID` template: the token alone looks like any branch job's.
    let pull_request = |later: i64| {
        jenkins.token(CHANGE_JOB, 5, |claims| {
            plain(claims);
            claims["iat"] = json!(claims["iat"].as_i64().unwrap() + later);
        })
    };
    let (status, answer) = exchange(&stack, &pull_request(0), &["heads-repository"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert_eq!(
        reasons(&answer),
        ["event: change_request is a dangerous trigger and the rule does not name it explicitly"]
    );
    let refused = stack.broker.audit_events().into_iter().find(|event| event["event"] == "exchange.refused").unwrap();
    assert_eq!(refused["job"]["fork"], json!("mallory"), "{refused}");

    let (status, answer) = exchange(&stack, &pull_request(1), &["heads-change-requests"]).await;
    assert_eq!(status, 200, "{answer}");
    let job = granted_job(&stack);
    assert_eq!((&job["event"], &job["fork"], job.get("ref")), (&json!("change_request"), &json!("mallory"), None));
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_with_the_api_a_build_of_no_multibranch_project_has_an_unknown_ref() {
    let jenkins = Jenkins::start().await;
    let stack = with_api(&jenkins, true).await;
    jenkins.set_build(FREESTYLE, 12, Build::Running { agent: Some(AGENT) });
    let (status, answer) = exchange(&stack, &jenkins.token(FREESTYLE, 12, plain), &["heads-main"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert!(
        reasons(&answer)
            .iter()
            .any(|reason| reason.starts_with("ref unknown: ") && reason.contains("not a multibranch build")),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_without_the_api_a_branch_claim_maps_as_before_and_without_one_the_ref_is_unknown() {
    let jenkins = Jenkins::start().await;
    let stack = with_api(&jenkins, false).await;
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, |_| {}), &["heads-main"]).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 43, plain), &["heads-main"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert!(
        reasons(&answer).iter().any(|reason| reason.starts_with("ref unknown: the token has no `branch` claim")),
        "{answer}"
    );
    assert_eq!(jenkins.calls("/job/"), 0, "no API is asked");
}
