//! Jenkins end to end, against a loopback controller (`support::jenkins`), OpenBao and the broker:
//! the `oidc-provider` plugin's tokens verified with its leading-zero JWKS, builds named by their
//! job URL, branch and change-request builds, replays of tokens that carry no `jti`. How builds
//! end (the REST API, the Notification plugin) and single-use agents: `jenkins_end.rs`.

use std::time::Duration;

use ci_creds::ci::CiKind;
use ci_creds::identity::{IssuerConfig, Verifier};
use ci_creds::net::HttpClient;
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

use crate::support::AUDIENCE;
use crate::support::jenkins::{BUILD, FULL_NAME, Jenkins, MAIN, tampered};
use crate::support::stack::Stack;

/// Roles for Jenkins builds, appended to the stack's policy.
pub const ROLES: &str = r#"  - name: jenkins-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: [jenkins, jenkins-static, jenkins-folder], repository: octo-org/octo-repo }
  - name: jenkins-main
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, job_name: octo-org/octo-repo/main, ref: refs/heads/main }
  - name: jenkins-org-glob
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, job_name: "glob:octo-org/*" }
  - name: jenkins-change-requests
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, repository: octo-org/octo-repo, event: [change_request] }
  - name: jenkins-single-use
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: jenkins, runner_tier: jenkins-agents }
"#;

/// A stack whose broker pins `jenkins` as issuer `jenkins` (with `issuer_extra` lines), after
/// `config` (tables, then any more `[[issuers]]` entries), with the runner tiers `tiers`.
pub async fn stack(jenkins: &Jenkins, config: &str, issuer_extra: &str, tiers: &str) -> Stack {
    let config = format!("{}{config}", jenkins.issuer_config(issuer_extra));
    Stack::start_with_policy(None, &config, tiers, ROLES, jenkins.env()).await
}

pub async fn exchange(stack: &Stack, token: &str, roles: &[&str]) -> (u16, Value) {
    stack.broker.exchange(token, &json!({ "roles": roles })).await
}

/// The error code and message of a refusal.
pub fn refusal(answer: &Value) -> (Option<&str>, &str) {
    (answer["error"].as_str(), answer["message"].as_str().unwrap_or_default())
}

/// The `job` of the audit trail's `exchange.granted` events, in order.
fn granted_jobs(stack: &Stack) -> Vec<Value> {
    let events = stack.broker.audit_events().into_iter();
    events.filter(|event| event["event"] == "exchange.granted").map(|event| event["job"].clone()).collect()
}

fn deny_reasons(answer: &Value) -> Vec<&str> {
    answer["denied"][0]["reasons"].as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_leading_zero_jwks_verifies_the_plugins_tokens_by_discovery_or_a_fixed_jwks_url() {
    let jenkins = Jenkins::start().await;
    // A second controller whose keys the broker fetches from `jwks_url`, never discovering.
    let fixed = Jenkins::start().await;
    let static_issuer = format!(
        "\n[[issuers]]\nname = \"jenkins-static\"\nkind = \"jenkins\"\nissuer = \"{}\"\njwks_url = \"{}oidc/jwks\"\n",
        fixed.issuer, fixed.root
    );
    let stack = stack(&jenkins, &static_issuer, "", "").await;

    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, |_| {}), &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(jenkins.calls("/oidc/.well-known/openid-configuration"), 1, "{:?}", jenkins.requests());
    assert_eq!(jenkins.calls("/oidc/jwks"), 1);

    let (status, answer) = exchange(&stack, &fixed.token(MAIN, BUILD, |_| {}), &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(fixed.calls("/oidc/jwks"), 1);
    assert_eq!(fixed.calls("/oidc/.well-known"), 0, "jwks_url spares discovery");

    // The payload of a good token changed, its signature kept: another build's number, a later `exp`.
    let good = jenkins.token(MAIN, BUILD, |claims| claims["iat"] = json!(claims["iat"].as_i64().unwrap() - 1));
    for edit in [(|claims: &mut Value| claims["build_number"] = json!(43)) as fn(&mut Value), |claims| {
        claims["exp"] = json!(claims["exp"].as_i64().unwrap() + 3600)
    }] {
        let (status, answer) = exchange(&stack, &tampered(&good, edit), &["jenkins-read"]).await;
        assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    }
    let (status, answer) = exchange(&stack, &good, &["jenkins-read"]).await;
    assert_eq!(status, 200, "the untampered token still verifies: {answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_tokens_naming_no_job_of_the_issuers_controller_or_living_too_long_are_refused() {
    let jenkins = Jenkins::start().await;
    // The same controller's issuer for a credential kept in folder `octo-org`.
    let folder = format!(
        "\n[[issuers]]\nname = \"jenkins-folder\"\nkind = \"jenkins\"\nissuer = \"{0}/job/octo-org\"\njwks_url = \"{0}/jwks\"\n",
        jenkins.issuer
    );
    let stack = stack(&jenkins, &folder, "max_token_lifetime = \"30m\"", "").await;
    let twenty_minutes = |claims: &mut Value| claims["exp"] = json!(claims["iat"].as_i64().unwrap() + 1200);

    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, |_| {}), &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
    assert!(refusal(&answer).1.contains("max_token_lifetime"), "the plugin's default hour: {answer}");
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, BUILD, twenty_minutes), &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");

    let other_host = jenkins.root.replace("127.0.0.1", "localhost");
    for sub in [jenkins.root.clone(), format!("{other_host}{MAIN}"), format!("{}job/", jenkins.root)] {
        let token = jenkins.token(MAIN, 43, |claims| {
            twenty_minutes(claims);
            claims["sub"] = json!(sub);
        });
        let (status, answer) = exchange(&stack, &token, &["jenkins-read"]).await;
        assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{sub}: {answer}");
        assert!(refusal(&answer).1.contains("`sub`"), "{sub}: {answer}");
    }
    // A token minted outside a build: `sub` the root URL and no build number.
    let outside = jenkins.token(MAIN, 44, |claims| {
        twenty_minutes(claims);
        claims["sub"] = json!(jenkins.root);
        claims.as_object_mut().unwrap().remove("build_number");
    });
    assert_eq!(exchange(&stack, &outside, &["jenkins-read"]).await.0, 401);

    // The folder's issuer speaks for the jobs inside the folder only.
    let in_folder = |job: &str| {
        jenkins.token(job, 45, |claims| {
            claims["iss"] = json!(format!("{}/job/octo-org", jenkins.issuer));
            twenty_minutes(claims);
        })
    };
    let (status, answer) = exchange(&stack, &in_folder(MAIN), &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) =
        exchange(&stack, &in_folder("job/other-org/job/octo-repo/job/main/"), &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_token_without_jti_is_exchanged_once() {
    let jenkins = Jenkins::start().await;
    let stack = stack(&jenkins, "", "", "").await;
    let token = jenkins.token(MAIN, BUILD, |_| {});
    assert_eq!(exchange(&stack, &token, &["jenkins-read"]).await.0, 200);
    let (status, answer) = exchange(&stack, &token, &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("token_replayed")), "{answer}");
    let refused: Vec<Value> =
        stack.broker.audit_events().into_iter().filter(|event| event["event"] == "exchange.refused").collect();
    assert_eq!(refused.len(), 1);
    assert!(refused[0]["reason"].as_str().unwrap().contains("already exchanged"), "{}", refused[0]);
    assert_eq!(refused[0]["token_sha256"], ci_creds::identity::token_sha256(&token));

    // Another binding in the same build, a second later: another token.
    let next = jenkins.token(MAIN, BUILD, |claims| claims["iat"] = json!(claims["iat"].as_i64().unwrap() + 1));
    assert_eq!(exchange(&stack, &next, &["jenkins-read"]).await.0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_branch_jobs_map_to_their_repository_and_ref_and_job_name_stays_in_its_folder() {
    let jenkins = Jenkins::start().await;
    let stack = stack(&jenkins, "", "", "").await;
    let main = jenkins.token(MAIN, BUILD, |_| {});
    let (status, answer) = exchange(&stack, &main, &["jenkins-read", "jenkins-main"]).await;
    assert_eq!(status, 200, "{answer}");
    let feature = "job/octo-org/job/octo-repo/job/feature%252Fx/";
    let token = jenkins.token(feature, 7, |claims| claims["branch"] = json!("feature/x"));
    let (status, answer) = exchange(&stack, &token, &["jenkins-read"]).await;
    assert_eq!(status, 200, "{answer}");

    let jobs = granted_jobs(&stack);
    let seen: Vec<(&Value, &Value, &Value, &Value)> =
        jobs.iter().map(|job| (&job["job_id"], &job["repository"], &job["ref"], &job["run_id"])).collect();
    assert_eq!(
        seen,
        [
            (&json!(format!("{FULL_NAME}#42")), &json!("octo-org/octo-repo"), &json!("refs/heads/main"), &json!("42")),
            (
                &json!("octo-org/octo-repo/feature%2Fx#7"),
                &json!("octo-org/octo-repo"),
                &json!("refs/heads/feature/x"),
                &json!("7")
            ),
        ]
    );
    let listed: Value = serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap();
    let listed: Vec<(&Value, &Value)> =
        listed.as_array().unwrap().iter().map(|job| (&job["job_id"], &job["repository"])).collect();
    assert!(listed.contains(&(&json!("octo-org/octo-repo/main#42"), &json!("octo-org/octo-repo"))), "{listed:?}");

    // The same branch and repository names in another folder are another job.
    let elsewhere = jenkins.token("job/other-org/job/octo-repo/job/main/", BUILD, |_| {});
    let (status, answer) = exchange(&stack, &elsewhere, &["jenkins-main"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert!(deny_reasons(&answer).iter().any(|reason| reason.starts_with("job_name: ")), "{answer}");
    // `*` never crosses a `/` of the full name.
    let (status, answer) = exchange(&stack, &jenkins.token(MAIN, 8, |_| {}), &["jenkins-org-glob"]).await;
    assert_eq!(status, 403, "{answer}");

    // A branch claim that disagrees with the job URL's branch.
    let lying = jenkins.token(MAIN, 9, |claims| claims["branch"] = json!("release"));
    let (status, answer) = exchange(&stack, &lying, &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (401, Some("invalid_token")), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_change_request_builds_need_a_rule_naming_change_request() {
    let jenkins = Jenkins::start().await;
    let stack = stack(&jenkins, "", "", "").await;
    let pull_request = |iat_offset: i64| {
        jenkins.token("job/octo-org/job/octo-repo/job/PR-7/", 3, |claims| {
            claims["branch"] = json!("PR-7");
            claims["change_id"] = json!("7");
            claims["change_fork"] = json!("mallory");
            claims["iat"] = json!(claims["iat"].as_i64().unwrap() + iat_offset);
        })
    };
    let (status, answer) = exchange(&stack, &pull_request(0), &["jenkins-read"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert_eq!(
        deny_reasons(&answer),
        ["event: change_request is a dangerous trigger and the rule does not name it explicitly"]
    );
    let (status, answer) = exchange(&stack, &pull_request(1), &["jenkins-change-requests"]).await;
    assert_eq!(status, 200, "{answer}");
    let job = granted_jobs(&stack).pop().unwrap();
    assert_eq!(
        (&job["job_id"], &job["event"], job.get("ref")),
        (&json!("octo-org/octo-repo/PR-7#3"), &json!("change_request"), None)
    );
}

/// Re-saving the plugin's credential makes a new key under the same `kid` and drops the old one:
/// a token that fails its cached key must refetch the keys (once per cooldown), as an unknown
/// `kid` does, or every build's token fails until the cache ages out (an hour).
#[tokio::test(flavor = "multi_thread")]
async fn jenkins_key_rotation_under_the_same_kid_is_picked_up_after_a_bad_signature() {
    const COOLDOWN: Duration = Duration::from_millis(600);
    let jenkins = Jenkins::start().await;
    let config = IssuerConfig {
        name: "jenkins".into(),
        kind: CiKind::Jenkins,
        issuer: jenkins.issuer.clone(),
        jwks_url: None,
        algorithms: vec![Algorithm::RS256],
        max_token_lifetime: None,
        audience: None,
        claim_names: Default::default(),
        controller_url: None,
    };
    let verifier = Verifier::new(AUDIENCE.into(), vec![config.clone()], HttpClient::new().unwrap())
        .with_refresh_cooldown(COOLDOWN);
    verifier.verify(&jenkins.token(MAIN, BUILD, |_| {})).await.expect("the fixture's key");
    jenkins.rotate_key();
    let rotated = jenkins.token(MAIN, 43, |_| {});
    let fresh = Verifier::new(AUDIENCE.into(), vec![config], HttpClient::new().unwrap());
    fresh.verify(&rotated).await.expect("a broker that never cached the old key trusts the new one");
    tokio::time::sleep(COOLDOWN + Duration::from_millis(100)).await;
    let job = verifier.verify(&rotated).await;
    assert!(job.is_ok(), "the rotated key is fetched and trusted: {:?}", job.err());
    assert_eq!(jenkins.calls("/oidc/jwks"), 3, "once each at first, and once after the bad signature");
}
