//! Ending a job makes its STS sessions useless: its source identity lands in the target role's
//! `ci-creds-revoked` inline policy, read back from IAM (moto); expired entries are pruned; the
//! role's inline-policy budget, concurrent ends and an IAM outage are survived.

use std::time::Duration;

use ci_creds::store::LeaseState;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::support::aws_stack::{AwsStack, Options};
use crate::support::fixture;
use crate::support::proxy::Mode;
use crate::support::webhooks::{body, github_headers};

const JOB: &str = "289782451";

fn deny_statement(sid: &str, identities: &[&str]) -> Value {
    json!({"Sid": sid, "Effect": "Deny", "Action": "*", "Resource": "*",
           "Condition": {"StringEquals": {"aws:SourceIdentity": identities}}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_completion_webhook_denies_the_jobs_sessions_on_its_role() {
    let stack = AwsStack::start().await;
    let credential = stack.mint(JOB, "deploy-aws").await;
    assert_eq!(stack.deny_policy("deploy-prod").await, None, "nothing denied while the job runs");

    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let (status, answer) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!((status, answer), (200, json!({"job_id": JOB, "revoked": 1})));
    stack.until_leases(JOB, LeaseState::Revoked, Duration::from_secs(10)).await;

    let policy = stack.deny_policy("deploy-prod").await.expect("ci-creds-revoked is on the role");
    let statements = policy["Statement"].as_array().unwrap();
    assert_eq!(statements.len(), 1, "{policy}");
    let statement = &statements[0];
    assert_eq!(
        (&statement["Effect"], &statement["Action"], &statement["Resource"]),
        (&json!("Deny"), &json!("*"), &json!("*"))
    );
    assert_eq!(statement["Condition"], json!({"StringEquals": {"aws:SourceIdentity": ["github@289782451"]}}));
    // The statement is named after the moment the session is dead, so it can be pruned then.
    let sid = statement["Sid"].as_str().unwrap();
    let until: i64 = sid.strip_prefix("CiCredsUntil").and_then(|n| n.parse().ok()).expect(sid);
    let expires_at = OffsetDateTime::parse(credential["expires_at"].as_str().unwrap(), &Rfc3339).unwrap();
    assert!((0..=60).contains(&(until - expires_at.unix_timestamp())), "{until} vs {expires_at}");
    assert_eq!(stack.denied("budget").await, Vec::<String>::new(), "other roles are untouched");

    let (status, answer) = stack.broker.exchange(&stack.token(JOB), &json!({"roles": ["deploy-aws"]})).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sweep_prunes_expired_identities_and_deletes_an_empty_list() {
    // Left by an earlier broker run: a job whose sessions died 10 minutes ago.
    let expired = ci_creds::clock::now() - 600;
    let stale = json!({"Version": "2012-10-17", "Statement": [deny_statement(&format!("CiCredsUntil{expired}"), &["github@1"])]});
    let stack = AwsStack::start_with(Options {
        seed: vec![
            ("deploy-prod", "ci-creds-revoked", stale.to_string()),
            ("budget", "ci-creds-revoked", stale.to_string()),
        ],
        ..Options::default()
    })
    .await;
    stack.mint(JOB, "deploy-aws").await;
    stack.end(JOB).await;
    stack.until_leases(JOB, LeaseState::Revoked, Duration::from_secs(10)).await;
    let mut pruned = false;
    for _ in 0..50 {
        if stack.deny_policy("budget").await.is_none() {
            pruned = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(pruned, "the sweep deletes a deny list whose every entry expired");
    assert!(stack.broker.logs().contains("pruned expired sessions from the deny list"));
    assert_eq!(
        stack.denied("deploy-prod").await,
        ["github@289782451"],
        "the live session stays denied, the dead one is gone"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(stack.denied("deploy-prod").await, ["github@289782451"], "later sweeps keep what has not expired");
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_of_one_role_ending_at_once_all_land_in_its_list() {
    let stack = AwsStack::start().await;
    let jobs: Vec<String> = (1..=6).map(|i| format!("50{i}")).collect();
    for job in &jobs {
        stack.mint(job, "deploy-aws").await;
    }
    futures_util::future::join_all(jobs.iter().map(|job| stack.end(job))).await;
    for job in &jobs {
        stack.until_leases(job, LeaseState::Revoked, Duration::from_secs(15)).await;
    }
    let expected: Vec<String> = jobs.iter().map(|job| format!("github@{job}")).collect();
    assert_eq!(stack.denied("deploy-prod").await, expected, "no end lost to a concurrent read-modify-write");
}

#[tokio::test(flavor = "multi_thread")]
async fn revocation_is_retried_through_an_iam_outage() {
    let stack = AwsStack::start().await;
    stack.mint(JOB, "deploy-aws").await;
    stack.aws_proxy.set(Mode::Refuse);
    stack.end(JOB).await;
    let mut retried = false;
    for _ in 0..100 {
        let leases = stack.leases(JOB).await;
        if leases[0].attempts >= 2 {
            assert_eq!(leases[0].state, LeaseState::Revoking, "{leases:?}");
            assert!(leases[0].last_error.as_deref().is_some_and(|e| e.contains("aws")), "{leases:?}");
            retried = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(retried, "no retry seen");
    assert_eq!(stack.deny_policy("deploy-prod").await, None);

    stack.aws_proxy.set(Mode::Forward);
    stack.until_leases(JOB, LeaseState::Revoked, Duration::from_secs(30)).await;
    assert_eq!(stack.denied("deploy-prod").await, ["github@289782451"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn falls_back_to_a_token_issue_time_cutoff_when_the_budget_would_overflow() {
    // Another team's inline policy already takes most of the role's 10,240 characters.
    let filler = "x".repeat(9_850);
    let others = json!({"Version": "2012-10-17", "Statement": [{"Sid": "Ops", "Effect": "Deny",
        "Action": "s3:DeleteBucket", "Resource": format!("arn:aws:s3:::{filler}")}]});
    let stack = AwsStack::start_with(Options {
        seed: vec![("budget", "ops-guardrail", others.to_string())],
        ..Options::default()
    })
    .await;

    let jobs: Vec<String> = (1..=8).map(|i| format!("90000000000{i}")).collect();
    for job in &jobs {
        stack.mint(job, "budget-aws").await;
    }
    let mut ended_at = OffsetDateTime::now_utc();
    let mut fell_back = false;
    for job in &jobs {
        ended_at = OffsetDateTime::now_utc();
        stack.end(job).await;
        stack.until_leases(job, LeaseState::Revoked, Duration::from_secs(10)).await;
        let policy = stack.deny_policy("budget").await.expect("a deny list");
        if policy["Statement"][0]["Condition"].get("DateLessThan").is_some() {
            fell_back = true;
            break;
        }
    }
    assert!(fell_back, "eight identities cannot fit in what the other policy leaves");
    let policy = stack.deny_policy("budget").await.unwrap();
    let statements = policy["Statement"].as_array().unwrap();
    assert_eq!(statements.len(), 1, "the list is replaced by one statement: {policy}");
    let cutoff = statements[0]["Condition"]["DateLessThan"]["aws:TokenIssueTime"].as_str().unwrap();
    let cutoff = OffsetDateTime::parse(cutoff, &Rfc3339).unwrap();
    assert!(cutoff > ended_at && cutoff - ended_at <= time::Duration::seconds(3), "{cutoff} vs {ended_at}");
    assert_eq!(cutoff.nanosecond(), 0, "whole seconds");
    assert!(
        stack
            .broker
            .logs()
            .lines()
            .any(|l| l.contains("budget") && l.contains("aws:TokenIssueTime") && l.contains("WARN"))
    );

    // Every earlier session is denied by the cutoff; the broker keeps minting and revoking. The
    // next identity fits beside the cutoff, or the cutoff moves past its session.
    let first_cutoff = cutoff;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    stack.mint("42", "budget-aws").await;
    let ended_42 = OffsetDateTime::now_utc();
    stack.end("42").await;
    stack.until_leases("42", LeaseState::Revoked, Duration::from_secs(10)).await;
    let after = stack.deny_policy("budget").await.unwrap();
    let cutoffs: Vec<OffsetDateTime> = after["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["Condition"]["DateLessThan"]["aws:TokenIssueTime"].as_str())
        .map(|at| OffsetDateTime::parse(at, &Rfc3339).unwrap())
        .collect();
    let listed = stack.denied("budget").await == ["github@42"];
    let moved = cutoffs.len() == 1 && cutoffs[0] > ended_42;
    assert!((listed && cutoffs == [first_cutoff]) || moved, "{after}");
}
