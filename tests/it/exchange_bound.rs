//! Address binding through the HTTP API, as a job meets it: the broker process listens on
//! 127.0.0.1, the job's exchange comes from another loopback address (directly, or through a
//! trusted proxy that forwards it), and the Vault token it gets works only from the address the
//! broker saw.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::support::github_token;
use crate::support::stack::Stack;

const BOUND_ROLE: &str = r#"
  - name: read-config-bound
    backend: vault
    max_ttl: 5m
    bind_to_address: true
    vault: { policies: [read-config] }
    allow: [ { issuer: github, repository_id: "74" } ]
"#;

/// POSTs an exchange of the bound role from `from`, with `X-Forwarded-For: forwarded` if given;
/// returns status and JSON answer.
async fn exchange_from(stack: &Stack, from: &str, forwarded: Option<&str>) -> (u16, Value) {
    let from: IpAddr = from.parse().unwrap();
    let client = reqwest::Client::builder().local_address(from).build().unwrap();
    let mut request = client
        .post(format!("{}/v1/credentials", stack.broker.url))
        .bearer_auth(github_token(&stack.github, |_| {}))
        .json(&json!({"roles": ["read-config-bound"]}));
    if let Some(forwarded) = forwarded {
        request = request.header("X-Forwarded-For", forwarded);
    }
    let response = request.send().await.expect("broker answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The granted credential's Vault token and the block the answer says it is bound to.
fn bound_token(answer: &Value) -> (String, String) {
    let credential = &answer["credentials"][0];
    let token = credential["vault"]["token"].as_str().expect("a Vault token").to_owned();
    (token, credential["bound_to"].as_str().unwrap_or("(not bound)").to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_s_token_works_from_the_address_its_exchange_came_from_and_nowhere_else() {
    let stack = Stack::start_with("", BOUND_ROLE, vec![]).await;
    let (status, answer) = exchange_from(&stack, "127.0.0.5", None).await;
    assert_eq!(status, 200, "{answer}");
    let (token, bound_to) = bound_token(&answer);
    assert_eq!(bound_to, "127.0.0.5/32");
    let (status, secret) = stack.bao.read_secret_from(&token, "127.0.0.5").await;
    assert_eq!((status, &secret["data"]["data"]["colour"]), (200, &json!("blue")), "{secret}");
    let (status, refused) = stack.bao.read_secret_from(&token, "127.0.0.6").await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused.to_string().contains("permission denied"), "{refused}");

    // No proxy is trusted: a forged header changes nothing.
    let (status, answer) = exchange_from(&stack, "127.0.0.6", Some("127.0.0.5")).await;
    assert_eq!(status, 200, "{answer}");
    let (token, bound_to) = bound_token(&answer);
    assert_eq!(bound_to, "127.0.0.6/32", "the peer, not the forged header");
    assert_eq!(stack.bao.read_secret_from(&token, "127.0.0.6").await.0, 200);
    assert_eq!(stack.bao.read_secret_from(&token, "127.0.0.5").await.0, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_a_trusted_proxy_the_forwarded_address_is_bound() {
    let mut stack = Stack::start_with("", BOUND_ROLE, vec![]).await;
    stack.broker.restart_with_top_level_keys(r#"trusted_proxies = ["127.0.0.5/32"]"#).await;
    let (status, answer) = exchange_from(&stack, "127.0.0.5", Some("127.0.0.7")).await;
    assert_eq!(status, 200, "{answer}");
    let (token, bound_to) = bound_token(&answer);
    assert_eq!(bound_to, "127.0.0.7/32", "the job's address, not the proxy's");
    assert_eq!(stack.bao.read_secret_from(&token, "127.0.0.7").await.0, 200);
    assert_eq!(stack.bao.read_secret_from(&token, "127.0.0.5").await.0, 403, "not from the proxy");

    // A peer that is not the trusted proxy: its forged header is ignored.
    let (status, answer) = exchange_from(&stack, "127.0.0.6", Some("127.0.0.7")).await;
    assert_eq!(status, 200, "{answer}");
    let (token, bound_to) = bound_token(&answer);
    assert_eq!(bound_to, "127.0.0.6/32");
    assert_eq!(stack.bao.read_secret_from(&token, "127.0.0.7").await.0, 403);
}
