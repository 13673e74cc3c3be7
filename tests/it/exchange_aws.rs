//! The exchange against a real STS (moto): what the session is, what STS was asked for, and how
//! the broker answers when STS is unreachable or refuses.

use ci_creds::backends::RevokeHandle;
use ci_creds::store::LeaseState;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::support;
use crate::support::aws_stack::{AwsStack, Options};
use crate::support::proxy::Mode;

const JOB: &str = "289782451";
const IDENTITY: &str = "github@289782451";

fn expires_in(credential: &Value) -> i64 {
    let at = OffsetDateTime::parse(credential["expires_at"].as_str().expect("expires_at"), &Rfc3339).unwrap();
    (at - OffsetDateTime::now_utc()).whole_seconds()
}

/// The form fields of the broker's `AssumeRole` calls, as sent.
fn assume_role_calls(stack: &AwsStack) -> Vec<Vec<(String, String)>> {
    stack
        .aws_proxy
        .request_bodies()
        .iter()
        .map(|body| url::form_urlencoded::parse(body.as_bytes()).into_owned().collect::<Vec<_>>())
        .filter(|fields| fields.iter().any(|(k, v)| k == "Action" && v == "AssumeRole"))
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn tags(fields: &[(String, String)]) -> Vec<(String, String)> {
    let mut tags: Vec<(String, String)> = (1..=50)
        .map_while(|i| {
            let key = field(fields, &format!("Tags.member.{i}.Key"))?;
            Some((key.to_owned(), field(fields, &format!("Tags.member.{i}.Value")).unwrap_or_default().to_owned()))
        })
        .collect();
    tags.sort();
    tags
}

#[tokio::test(flavor = "multi_thread")]
async fn mints_an_sts_session_named_after_the_job() {
    let stack = AwsStack::start().await;
    let (status, answer) =
        stack.broker.exchange(&stack.token(JOB), &json!({"roles": ["deploy-aws"], "ttl_seconds": 60})).await;
    assert_eq!(status, 200, "{answer}");
    let credential = &answer["credentials"][0];
    assert_eq!((credential["role"].as_str(), credential["backend"].as_str()), (Some("deploy-aws"), Some("aws")));
    assert_eq!(credential["aws"]["region"], "us-east-1");
    assert!(credential.get("vault").is_none());
    let in_seconds = expires_in(credential);
    assert!((890..=900).contains(&in_seconds), "60 s asked, raised to STS's 900 s minimum: {in_seconds}");

    // The session works, and STS knows it by the job's name.
    let aws = &credential["aws"];
    let key = aws["access_key_id"].as_str().unwrap();
    let session =
        stack.moto.sts(key, aws["secret_access_key"].as_str().unwrap(), Some(aws["session_token"].as_str().unwrap()));
    let me = session.get_caller_identity().send().await.expect("the minted keys work");
    assert_eq!(me.arn(), Some(format!("arn:aws:sts::123456789012:assumed-role/deploy-prod/{IDENTITY}").as_str()));

    // What moto recorded of the session: its role, name and session policy.
    let assumed = stack.moto.recorded("sts", "AssumedRole").await;
    let session = assumed.iter().find(|s| s["access_key_id"] == key).expect("moto recorded the session");
    assert_eq!(session["role_arn"], "arn:aws:iam::123456789012:role/deploy-prod");
    assert_eq!(session["session_name"], IDENTITY);
    let policy: Value = serde_json::from_str(session["policy"].as_str().expect("a session policy")).unwrap();
    assert_eq!(
        policy,
        json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]})
    );

    // What moto does not record, read off the wire: source identity, tags, duration.
    let calls = assume_role_calls(&stack);
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(field(call, "SourceIdentity"), Some(IDENTITY));
    assert_eq!(field(call, "RoleSessionName"), Some(IDENTITY));
    assert_eq!(field(call, "DurationSeconds"), Some("900"));
    let expected: Vec<(String, String)> = [
        ("ci_issuer", "github"),
        ("ci_job_id", JOB),
        ("ci_ref", "refs/heads/main"),
        ("ci_repository", "octo-org/octo-repo"),
        ("team", "web"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    assert_eq!(tags(call), expected);

    let leases = stack.leases(JOB).await;
    assert_eq!(leases.len(), 1);
    assert_eq!(leases[0].state, LeaseState::Active);
    let Some(RevokeHandle::Aws { role_arn, source_identity, expires_at }) = &leases[0].handle else {
        panic!("an AWS handle: {:?}", leases[0].handle);
    };
    assert_eq!((role_arn.as_str(), source_identity.as_str()), ("arn:aws:iam::123456789012:role/deploy-prod", IDENTITY));
    assert!((expires_at - ci_creds::clock::now() - 900).abs() <= 10, "the session's expiry is kept for pruning");
    assert!(!stack.broker.logs().contains(aws["secret_access_key"].as_str().unwrap()), "no secret in the log");
    assert!(!stack.broker.logs().contains(aws["session_token"].as_str().unwrap()), "no session token in the log");
}

#[tokio::test(flavor = "multi_thread")]
async fn clamps_the_duration_to_the_roles_max_and_sanitises_tags() {
    let stack = AwsStack::start().await;
    let token = support::github_token(&stack.github, |claims| {
        claims["check_run_id"] = json!("77");
        claims["ref"] = json!("refs/heads/feat/ü#1");
    });
    let (status, answer) = stack.broker.exchange(&token, &json!({"roles": ["deploy-aws"], "ttl_seconds": 86400})).await;
    assert_eq!(status, 200, "{answer}");
    let in_seconds = expires_in(&answer["credentials"][0]);
    assert!((3590..=3600).contains(&in_seconds), "the role's 1h max: {in_seconds}");
    let call = &assume_role_calls(&stack)[0];
    assert_eq!(field(call, "DurationSeconds"), Some("3600"));
    let tags = tags(call);
    assert!(tags.contains(&("ci_ref".to_owned(), "refs/heads/feat/ü_1".to_owned())), "{tags:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_503_when_sts_is_unreachable_and_leaves_no_active_lease() {
    let stack = AwsStack::start().await;
    stack.aws_proxy.set(Mode::Refuse);
    let (status, answer) = stack.broker.exchange(&stack.token(JOB), &json!({"roles": ["deploy-aws"]})).await;
    assert_eq!((status, answer["error"].as_str()), (503, Some("backend_unavailable")), "{answer}");
    let leases = stack.leases(JOB).await;
    assert_eq!(leases.iter().map(|l| l.state).collect::<Vec<_>>(), [LeaseState::Failed]);

    stack.aws_proxy.set(Mode::Forward);
    let (status, answer) = stack.broker.exchange(&stack.token(JOB), &json!({"roles": ["deploy-aws"]})).await;
    assert_eq!(status, 200, "works again once STS is back: {answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_502_backend_refused_with_the_aws_code_when_sts_denies() {
    let stack = AwsStack::start_with(Options { broker_without_permissions: true, ..Options::default() }).await;
    let (status, answer) = stack.broker.exchange(&stack.token(JOB), &json!({"roles": ["deploy-aws"]})).await;
    assert_eq!((status, answer["error"].as_str()), (502, Some("backend_refused")), "{answer}");
    let message = answer["message"].as_str().unwrap_or_default();
    assert!(message.contains("AccessDenied"), "{message}");
    assert!(!message.contains("arn:"), "the caller gets the code, the log gets the details: {message}");
    assert!(stack.broker.logs().contains("not authorized to perform: sts:AssumeRole"));
    let leases = stack.leases(JOB).await;
    assert_eq!(leases.iter().map(|l| l.state).collect::<Vec<_>>(), [LeaseState::Failed]);
}
