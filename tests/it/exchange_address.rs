//! The address an exchange came from, as an operator reads it back: the audit trail and
//! `jobs list`. The broker listens on 127.0.0.1; clients connect from other loopback addresses.

use std::net::{IpAddr, Ipv4Addr};

use serde_json::{Value, json};

use crate::support::github_token;
use crate::support::stack::Stack;

/// The GitHub fixture's job.
const JOB: &str = "289782451";

/// POSTs an exchange of `read-config` from `from`, with an `X-Forwarded-For` line per entry of
/// `forwarded`; returns status and JSON answer.
async fn exchange_from(stack: &Stack, from: [u8; 4], forwarded: &[&str]) -> (u16, Value) {
    let client = reqwest::Client::builder().local_address(IpAddr::V4(Ipv4Addr::from(from))).build().expect("client");
    let mut request = client
        .post(format!("{}/v1/credentials", stack.broker.url))
        .bearer_auth(github_token(&stack.github, |_| {}))
        .json(&json!({"roles": ["read-config"]}));
    for line in forwarded {
        request = request.header("X-Forwarded-For", *line);
    }
    let response = request.send().await.expect("broker answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The `address` of the last audit event named `event` of the fixture's job.
fn audited_address(stack: &Stack, event: &str) -> Value {
    let events = stack.broker.audit_events();
    let last = events.iter().rev().find(|e| e["event"] == event && e["job"]["job_id"] == JOB);
    last.map(|e| e["address"].clone()).unwrap_or(Value::Null)
}

/// The job's address as `jobs list --format json` shows it.
fn listed_address(stack: &Stack) -> Value {
    let listed: Value = serde_json::from_str(&stack.broker.cli(&["jobs", "list", "--format", "json"])).unwrap();
    let job = listed.as_array().unwrap().iter().find(|job| job["job_id"] == JOB).cloned();
    job.map(|job| job["address"].clone()).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tcp_peer_is_the_address_without_trusted_proxies_and_a_forged_header_is_ignored() {
    let stack = Stack::start().await;
    let (status, answer) = exchange_from(&stack, [127, 0, 0, 5], &[]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(audited_address(&stack, "exchange.granted"), "127.0.0.5");
    assert_eq!(audited_address(&stack, "credential.minted"), "127.0.0.5");
    assert_eq!(listed_address(&stack), "127.0.0.5");
    let table = stack.broker.cli(&["jobs", "list"]);
    assert!(table.lines().next().unwrap_or_default().ends_with("ADDRESS"), "{table}");
    assert!(table.lines().any(|line| line.contains(JOB) && line.ends_with("127.0.0.5")), "{table}");

    // No proxy is trusted: the header is not read, however it is written.
    let (status, answer) = exchange_from(&stack, [127, 0, 0, 6], &["203.0.113.9"]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(audited_address(&stack, "exchange.granted"), "127.0.0.6");
    assert_eq!(listed_address(&stack), "127.0.0.6", "the latest exchange's address is the job's");
    let (status, answer) = exchange_from(&stack, [127, 0, 0, 6], &["not an address"]).await;
    assert_eq!(status, 200, "an untrusted peer's header is never parsed: {answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trusted_proxy_forwards_the_address_and_a_malformed_header_from_it_is_refused() {
    let mut stack = Stack::start().await;
    stack.broker.restart_with_top_level_keys(r#"trusted_proxies = ["127.0.0.5/32"]"#).await;

    let (status, answer) = exchange_from(&stack, [127, 0, 0, 5], &["203.0.113.9, 127.0.0.5"]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(audited_address(&stack, "exchange.granted"), "203.0.113.9");
    assert_eq!(audited_address(&stack, "credential.minted"), "203.0.113.9");
    assert_eq!(listed_address(&stack), "203.0.113.9");

    // Several header lines are one list: the rightmost untrusted entry is the second line's.
    let (status, _) = exchange_from(&stack, [127, 0, 0, 5], &["198.51.100.1", "203.0.113.10"]).await;
    assert_eq!(status, 200);
    assert_eq!(audited_address(&stack, "exchange.granted"), "203.0.113.10");

    // A peer that is not the trusted proxy: its forged header is ignored.
    let (status, _) = exchange_from(&stack, [127, 0, 0, 6], &["203.0.113.9"]).await;
    assert_eq!(status, 200);
    assert_eq!(audited_address(&stack, "exchange.granted"), "127.0.0.6");
    assert_eq!(listed_address(&stack), "127.0.0.6");

    let minted_before = stack.leases("github", JOB).await.len();
    let (status, answer) = exchange_from(&stack, [127, 0, 0, 5], &["203.0.113.9, proxy.internal"]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_forwarded_for")), "{answer}");
    assert_eq!(stack.leases("github", JOB).await.len(), minted_before, "nothing is minted");
}
