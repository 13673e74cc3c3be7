//! `[webhooks.<name>]` endpoints, each ending its own issuer's jobs only: a Jenkins controller's
//! root issuer and a folder's issuer, two Azure DevOps organisations, side by side with the tables
//! named after their CI (today's files). A delivery about one issuer's job sent to another's
//! endpoint ends nothing of the first.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::azure_devops::{
    AzureDevOps, HOOK_CREDENTIALS, ORG, OTHER_ORG, RUN, Run, hook_headers, run_state_changed,
};
use crate::support::jenkins::{
    BUILD, FULL_NAME, Jenkins, MAIN, NOTIFICATION_CREDENTIALS, notification, notification_headers,
};
use crate::support::stack::Stack;

/// The folder issuer's Notification credentials, and the env var the broker reads them from.
const FOLDER_CREDENTIALS: &str = "folder-notify:f0lder-s3cret";
const FOLDER_ENV: &str = "TEST_JENKINS_FOLDER_NOTIFICATION_CREDENTIALS";
/// The other organisation's service hook credentials, and their env var.
const OTHER_HOOK_CREDENTIALS: &str = "other-hooks:0ther-s3cret";
const OTHER_HOOK_ENV: &str = "TEST_AZURE_OTHER_HOOK_CREDENTIALS";

fn events(stack: &Stack, name: &str) -> Vec<Value> {
    stack.broker.audit_events().into_iter().filter(|event| event["event"] == name).collect()
}

/// `(job_id, ended_by)` of every `job.ended` event of `issuer`, in order.
fn ended(stack: &Stack, issuer: &str) -> Vec<(String, String)> {
    events(stack, "job.ended")
        .into_iter()
        .filter(|event| event["job"]["issuer"] == issuer)
        .map(|event| {
            let field = |name: &str| event[name].as_str().unwrap_or_default().to_owned();
            (event["job"]["job_id"].as_str().unwrap_or_default().to_owned(), field("ended_by"))
        })
        .collect()
}

async fn metric_lines(stack: &Stack) -> Vec<String> {
    let (_, metrics) = stack.broker.get_text("/metrics").await;
    metrics.lines().filter(|line| line.starts_with("ci_creds_webhook_deliveries_total{")).map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_root_and_folder_issuers_each_end_their_own_builds_at_their_own_endpoint() {
    let jenkins = Jenkins::start().await;
    let folder_issuer = format!("{}/job/octo-org", jenkins.issuer);
    // The root issuer's table is named after its CI, as before tables had names.
    let config = format!(
        "{}\n[webhooks.jenkins-octo-org]\nissuer = \"jenkins-folder\"\ncredentials_env = \"{FOLDER_ENV}\"\n\
         \n[[issuers]]\nname = \"jenkins-folder\"\nkind = \"jenkins\"\nissuer = \"{folder_issuer}\"\njwks_url = \"{}/jwks\"\n",
        jenkins.webhook_config(),
        jenkins.issuer
    );
    let mut env = jenkins.env();
    env.push((FOLDER_ENV, FOLDER_CREDENTIALS.to_owned()));
    let config = format!("{}{config}", jenkins.issuer_config(""));
    let stack = Stack::start_with_policy(None, &config, "", crate::jenkins::ROLES, env).await;
    let root_token = |number: u64| jenkins.token(MAIN, number, |_| {});
    let folder_token = |number: u64| jenkins.token(MAIN, number, |claims| claims["iss"] = json!(folder_issuer));
    let job_id = |number: u64| format!("{FULL_NAME}#{number}");

    // Build 42 binds a credential of each issuer (a build in the folder may use both); build 43
    // only the folder's, build 44 only the root's.
    let root_42 = stack.accessors(&root_token(BUILD), &["jenkins-read"]).await;
    let folder_42 = stack.accessors(&folder_token(BUILD), &["jenkins-read"]).await;
    let folder_43 = stack.accessors(&folder_token(43), &["jenkins-read"]).await;
    let root_44 = stack.accessors(&root_token(44), &["jenkins-read"]).await;
    let broker = &stack.broker;
    let deliver = |path: &'static str, credentials: &'static str, number: u64| {
        let body = notification(&jenkins.root, MAIN, number, "COMPLETED");
        let headers = notification_headers(Some(credentials));
        async move { broker.post(path, &headers, body).await }
    };

    // Build 43's end at the root's endpoint: the folder's credentials do not open it, and the
    // root's end the root issuer's build 43, which holds nothing.
    let (status, answer) = deliver("/v1/webhooks/jenkins", FOLDER_CREDENTIALS, 43).await;
    assert_eq!((status, &answer["error"]), (401, &json!("invalid_signature")), "{answer}");
    let (status, answer) = deliver("/v1/webhooks/jenkins", NOTIFICATION_CREDENTIALS, 43).await;
    assert_eq!((status, answer), (200, json!({"job_id": job_id(43), "revoked": 0})));
    // And the other way round.
    let (status, answer) = deliver("/v1/webhooks/jenkins-octo-org", NOTIFICATION_CREDENTIALS, 44).await;
    assert_eq!((status, &answer["error"]), (401, &json!("invalid_signature")), "{answer}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for accessor in [&folder_43[0], &root_44[0]] {
        assert!(stack.bao.accessor_alive(accessor).await, "another issuer's endpoint ended nothing of this one");
    }
    assert!(ended(&stack, "jenkins-folder").is_empty());

    // Each endpoint ends its own issuer's build.
    let (status, answer) = deliver("/v1/webhooks/jenkins-octo-org", FOLDER_CREDENTIALS, 43).await;
    assert_eq!((status, answer), (200, json!({"job_id": job_id(43), "revoked": 1})));
    stack.until_revoked(&folder_43, Duration::from_secs(5)).await;
    let (status, answer) = deliver("/v1/webhooks/jenkins-octo-org", FOLDER_CREDENTIALS, BUILD).await;
    assert_eq!((status, answer), (200, json!({"job_id": job_id(BUILD), "revoked": 1})));
    stack.until_revoked(&folder_42, Duration::from_secs(5)).await;
    assert!(stack.bao.accessor_alive(&root_42[0]).await, "the root issuer's credential of the same build lives on");
    let (status, answer) = deliver("/v1/webhooks/jenkins", NOTIFICATION_CREDENTIALS, BUILD).await;
    assert_eq!((status, answer), (200, json!({"job_id": job_id(BUILD), "revoked": 1})));
    stack.until_revoked(&root_42, Duration::from_secs(5)).await;
    assert!(stack.bao.accessor_alive(&root_44[0]).await, "build 44 has not ended");

    let folder =
        [(job_id(43), "webhook:jenkins-octo-org".to_owned()), (job_id(BUILD), "webhook:jenkins-octo-org".to_owned())];
    assert_eq!(ended(&stack, "jenkins-folder"), folder);
    let root = [(job_id(43), "webhook:jenkins".to_owned()), (job_id(BUILD), "webhook:jenkins".to_owned())];
    assert_eq!(ended(&stack, "jenkins"), root);
    // A fresh token of each ended build is refused; the root issuer's build 44 still exchanges.
    let later = |claims: &mut Value| claims["iat"] = json!(claims["iat"].as_i64().unwrap() + 1);
    let fresh = jenkins.token(MAIN, 43, |claims| {
        claims["iss"] = json!(folder_issuer);
        later(claims);
    });
    let (status, answer) = stack.broker.exchange(&fresh, &json!({ "roles": ["jenkins-read"] })).await;
    assert_eq!((status, &answer["error"]), (409, &json!("job_ended")), "{answer}");
    let fresh = jenkins.token(MAIN, 44, later);
    assert_eq!(stack.broker.exchange(&fresh, &json!({ "roles": ["jenkins-read"] })).await.0, 200);

    // Refused deliveries are audited and counted under the endpoint they reached.
    let refused: Vec<(Value, Value)> = events(&stack, "webhook.refused")
        .into_iter()
        .map(|event| (event["ci"].clone(), event["webhook"].clone()))
        .collect();
    assert_eq!(refused, [(json!("jenkins"), json!("jenkins")), (json!("jenkins"), json!("jenkins-octo-org"))]);
    let lines = metric_lines(&stack).await;
    for expected in [
        r#"ci_creds_webhook_deliveries_total{ci="jenkins",webhook="jenkins",outcome="ended"} 2"#,
        r#"ci_creds_webhook_deliveries_total{ci="jenkins",webhook="jenkins",outcome="invalid_signature"} 1"#,
        r#"ci_creds_webhook_deliveries_total{ci="jenkins",webhook="jenkins-octo-org",outcome="ended"} 2"#,
        r#"ci_creds_webhook_deliveries_total{ci="jenkins",webhook="jenkins-octo-org",outcome="invalid_signature"} 1"#,
    ] {
        assert!(lines.iter().any(|line| line == expected), "{expected} in {lines:#?}");
    }

    // A name nobody configured is no endpoint, and not a label either.
    let (status, answer) = deliver("/v1/webhooks/jenkins-teams", NOTIFICATION_CREDENTIALS, 44).await;
    assert_eq!((status, &answer["error"]), (404, &json!("not_found")), "{answer}");
    let lines = metric_lines(&stack).await;
    assert!(!lines.iter().any(|line| line.contains("jenkins-teams")), "{lines:#?}");
    // A CI's own path with no table is counted under that CI, as before tables had names.
    let (status, _) = deliver("/v1/webhooks/circleci", NOTIFICATION_CREDENTIALS, 44).await;
    assert_eq!(status, 404);
    let unconfigured = r#"ci_creds_webhook_deliveries_total{ci="circleci",webhook="circleci",outcome="not_found"} 1"#;
    assert!(metric_lines(&stack).await.iter().any(|line| line == unconfigured));
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_organisations_each_end_their_own_runs_at_their_own_endpoint() {
    let azure = AzureDevOps::start().await;
    let config = format!(
        "{}\n[webhooks.azure-other]\nissuer = \"azure-other\"\ncredentials_env = \"{OTHER_HOOK_ENV}\"\n{}{}",
        azure.webhook_config("azure"),
        azure.api_config("azure-other", OTHER_ORG, ""),
        azure.issuer_config("azure-other", OTHER_ORG, ""),
    );
    let config = format!("{}{}{config}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    let mut env = azure.env();
    env.push((OTHER_HOOK_ENV, OTHER_HOOK_CREDENTIALS.to_owned()));
    let stack = Stack::start_with_policy(None, &config, "", crate::azure_pipelines::ROLES, env).await;
    // Run 4711 in each organisation, and run 4712 in the other one only.
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_run(OTHER_ORG, RUN, Run::InProgress);
    azure.set_run(OTHER_ORG, 4712, Run::InProgress);
    let ours = stack.accessors(&azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    let theirs = stack.accessors(&azure.token(OTHER_ORG, RUN, |_| {}), &["azure-other-org"]).await;
    let theirs_4712 = stack.accessors(&azure.token(OTHER_ORG, 4712, |_| {}), &["azure-other-org"]).await;
    let broker = &stack.broker;
    let deliver = |path: &'static str, credentials: &'static str, body: Vec<u8>| {
        let headers = hook_headers(Some(credentials));
        async move { broker.post(path, &headers, body).await }
    };
    const OURS: &str = "/v1/webhooks/azure_pipelines";
    const THEIRS: &str = "/v1/webhooks/azure-other";

    // One organisation's hook does not open the other's endpoint.
    let (status, _) = deliver(THEIRS, HOOK_CREDENTIALS, run_state_changed(RUN, "completed", "d-1")).await;
    assert_eq!(status, 401);
    let (status, _) = deliver(OURS, OTHER_HOOK_CREDENTIALS, run_state_changed(RUN, "completed", "d-2")).await;
    assert_eq!(status, 401);
    // Run 4712 is the other organisation's: at our endpoint its end is our run 4712's, which
    // holds nothing; the same delivery at its own endpoint is no redelivery, and ends it.
    let (status, answer) = deliver(OURS, HOOK_CREDENTIALS, run_state_changed(4712, "completed", "d-3")).await;
    assert_eq!((status, answer), (200, json!({"job_id": "4712", "revoked": 0})));
    tokio::time::sleep(Duration::from_millis(300)).await;
    for accessor in [&ours[0], &theirs[0], &theirs_4712[0]] {
        assert!(stack.bao.accessor_alive(accessor).await, "nothing above ended any run that holds credentials");
    }
    let (status, answer) = deliver(THEIRS, OTHER_HOOK_CREDENTIALS, run_state_changed(4712, "completed", "d-3")).await;
    assert_eq!((status, answer), (200, json!({"job_id": "4712", "revoked": 1})));
    stack.until_revoked(&theirs_4712, Duration::from_secs(5)).await;

    // Run 4711 of each organisation, each ended at its own endpoint only.
    let (status, answer) = deliver(OURS, HOOK_CREDENTIALS, run_state_changed(RUN, "completed", "d-4")).await;
    assert_eq!((status, answer), (200, json!({"job_id": "4711", "revoked": 1})));
    stack.until_revoked(&ours, Duration::from_secs(5)).await;
    assert!(stack.bao.accessor_alive(&theirs[0]).await, "the other organisation's run of the same number goes on");
    let (status, answer) = deliver(THEIRS, OTHER_HOOK_CREDENTIALS, run_state_changed(RUN, "completed", "d-5")).await;
    assert_eq!((status, answer), (200, json!({"job_id": "4711", "revoked": 1})));
    stack.until_revoked(&theirs, Duration::from_secs(5)).await;

    let by = |endpoint: &str| format!("webhook:{endpoint}");
    let (ours_ended, theirs_ended) = (ended(&stack, "azure"), ended(&stack, "azure-other"));
    assert_eq!(ours_ended, [("4712".to_owned(), by("azure_pipelines")), ("4711".to_owned(), by("azure_pipelines"))]);
    assert_eq!(theirs_ended, [("4712".to_owned(), by("azure-other")), ("4711".to_owned(), by("azure-other"))]);
    let lines = metric_lines(&stack).await;
    for expected in [
        r#"ci_creds_webhook_deliveries_total{ci="azure_pipelines",webhook="azure_pipelines",outcome="ended"} 2"#,
        r#"ci_creds_webhook_deliveries_total{ci="azure_pipelines",webhook="azure-other",outcome="ended"} 2"#,
    ] {
        assert!(lines.iter().any(|line| line == expected), "{expected} in {lines:#?}");
    }
}
