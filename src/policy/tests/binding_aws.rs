//! The session policy of a bound AWS role: every Allow holds only from the block or through an
//! AWS service, Deny statements stay as written, and a policy too large once bound is refused
//! when it loads.

use ipnet::IpNet;
use serde_json::{Value, json};

use super::aws_roles::load;
use crate::policy::aws_binding::SESSION_POLICY_PLAIN_TEXT_LIMIT;
use crate::policy::bound_session_policy;

fn block(text: &str) -> IpNet {
    text.parse().unwrap()
}

fn bound(policy: Option<Value>, block_text: &str) -> Value {
    let text = policy.map(|policy| policy.to_string());
    let bound = bound_session_policy(text.as_deref(), block(block_text)).expect("binds");
    serde_json::from_str(&bound).unwrap()
}

#[test]
fn without_a_session_policy_everything_the_role_allows_is_allowed_only_from_the_block() {
    let policy = bound(None, "127.0.0.5/32");
    assert_eq!(
        policy,
        json!({
            "Version": "2012-10-17",
            "Statement": [
                { "Effect": "Allow", "Action": "*", "Resource": "*",
                  "Condition": { "IpAddress": { "aws:SourceIp": "127.0.0.5/32" } } },
                { "Effect": "Allow", "Action": "*", "Resource": "*",
                  "Condition": { "Bool": { "aws:ViaAWSService": "true" } } }
            ]
        })
    );
}

#[test]
fn each_allow_keeps_its_own_conditions_and_gains_the_binding() {
    let policy = bound(
        Some(json!({
            "Version": "2012-10-17",
            "Statement": [
                { "Sid": "Read", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*",
                  "Condition": { "StringEquals": { "s3:prefix": "x" }, "IpAddress": { "aws:SourceVpc": "vpc-1" } } },
                { "Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*",
                  "Condition": { "NotIpAddress": { "aws:SourceIp": "10.0.0.0/8" } } }
            ]
        })),
        "2001:db8::/64",
    );
    let statements = policy["Statement"].as_array().unwrap();
    assert_eq!(statements.len(), 3, "two per Allow, the Deny once: {policy}");
    assert_eq!(statements[0]["Sid"], "Read");
    assert_eq!(statements[0]["Condition"]["StringEquals"], json!({ "s3:prefix": "x" }));
    assert_eq!(
        statements[0]["Condition"]["IpAddress"],
        json!({ "aws:SourceVpc": "vpc-1", "aws:SourceIp": "2001:db8::/64" })
    );
    assert_eq!(statements[1]["Sid"], "ReadViaAwsService", "Sids stay unique");
    assert_eq!(statements[1]["Condition"]["StringEquals"], json!({ "s3:prefix": "x" }));
    assert_eq!(statements[1]["Condition"]["Bool"], json!({ "aws:ViaAWSService": "true" }));
    assert!(statements[1]["Condition"]["IpAddress"].get("aws:SourceIp").is_none());
    // Narrowing a Deny to the block would lift it everywhere else.
    assert_eq!(
        statements[2],
        json!({ "Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*",
                "Condition": { "NotIpAddress": { "aws:SourceIp": "10.0.0.0/8" } } })
    );
}

#[test]
fn a_single_statement_mapping_is_bound_like_a_list() {
    let policy = bound(
        Some(
            json!({ "Version": "2012-10-17", "Statement": { "Effect": "Allow", "Action": "sts:GetCallerIdentity", "Resource": "*" } }),
        ),
        "198.51.100.0/24",
    );
    assert_eq!(policy["Statement"][0]["Condition"]["IpAddress"]["aws:SourceIp"], "198.51.100.0/24");
    assert_eq!(policy["Statement"][1]["Condition"]["Bool"]["aws:ViaAWSService"], "true");
}

#[test]
fn an_allow_already_testing_the_source_address_is_refused_at_load() {
    let role = "backend: aws\nmax_ttl: 1h\nbind_to_address: true\naws:\n  role_arn: \"arn:aws:iam::123456789012:role/deploy\"\n  session_policy: { Version: \"2012-10-17\", Statement: [ { Effect: Allow, Action: \"*\", Resource: \"*\", Condition: { IpAddress: { \"aws:sourceip\": 10.0.0.0/8 } } } ] }\n";
    let error = load(role).expect_err("refused");
    assert!(error.contains("already tests `aws:SourceIp`"), "{error}");
}

#[test]
fn a_session_policy_too_large_once_bound_is_refused_at_load_with_its_size() {
    let statement = |n: usize| {
        format!("{{ Sid: S{n}, Effect: Allow, Action: \"s3:GetObject\", Resource: \"arn:aws:s3:::bucket-{n}/*\" }}")
    };
    let policy = |count: usize| {
        let statements: Vec<String> = (0..count).map(statement).collect();
        format!(
            "backend: aws\nmax_ttl: 1h\nbind_to_address: true\naws:\n  role_arn: \"arn:aws:iam::123456789012:role/deploy\"\n  session_policy: {{ Version: \"2012-10-17\", Statement: [ {} ] }}\n",
            statements.join(", ")
        )
    };
    let fits = load(&policy(4)).expect("four statements fit");
    let text = fits.role("r").unwrap().aws.as_ref().unwrap().session_policy.clone();
    let longest = bound_session_policy(text.as_deref(), block("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128")).unwrap();
    assert!(longest.len() <= SESSION_POLICY_PLAIN_TEXT_LIMIT, "{}", longest.len());
    let error = load(&policy(12)).expect_err("twelve statements, bound, pass 2048 characters");
    assert!(error.contains("over STS's limit of 2048"), "{error}");
    assert!(load(&policy(12).replace("bind_to_address: true\n", "")).is_ok(), "unbound, the same policy loads");
}
