//! Bad input gets a clear JSON error with a stable code, never a panic or a hang.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::support;
use crate::support::github_token;
use crate::support::stack::Stack;

/// What is sent (a name, the Authorization header, the body) and the status and code expected.
struct Case {
    what: &'static str,
    auth: Option<String>,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
}

fn case(what: &'static str, auth: Option<String>, body: Vec<u8>, status: u16, code: &'static str) -> Case {
    Case { what, auth, body, status, code }
}

fn roles_body(roles: &[String]) -> Vec<u8> {
    json!({ "roles": roles }).to_string().into_bytes()
}

async fn post(
    what: &str,
    stack: &Stack,
    auth: Option<&str>,
    body: Vec<u8>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = stack.broker.http().post(format!("{}/v1/credentials", stack.broker.url)).body(body);
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{what}: an answer, not a dropped connection: {e}"));
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_every_bad_request_with_a_stable_code() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    let bearer = format!("Bearer {token}");
    let roles = br#"{"roles": ["deploy-prod"]}"#.to_vec();
    let big_kid = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": "k".repeat(64 * 1024)}).to_string());
    let cases = [
        case("empty body", Some(bearer.clone()), vec![], 400, "invalid_request"),
        case("not JSON", Some(bearer.clone()), b"roles=deploy-prod".to_vec(), 400, "invalid_request"),
        case("wrong shape", Some(bearer.clone()), br#"{"roles": "deploy-prod"}"#.to_vec(), 400, "invalid_request"),
        case("no roles", Some(bearer.clone()), br#"{"roles": []}"#.to_vec(), 400, "invalid_request"),
        case("empty role name", Some(bearer.clone()), br#"{"roles": [""]}"#.to_vec(), 400, "invalid_request"),
        case("129-character role name", Some(bearer.clone()), roles_body(&["r".repeat(129)]), 400, "invalid_request"),
        case("17 roles", Some(bearer.clone()), roles_body(&vec!["a".to_owned(); 17]), 400, "invalid_request"),
        case(
            "zero ttl",
            Some(bearer.clone()),
            br#"{"roles": ["a"], "ttl_seconds": 0}"#.to_vec(),
            400,
            "invalid_request",
        ),
        case(
            "fractional ttl",
            Some(bearer.clone()),
            br#"{"roles": ["a"], "ttl_seconds": 600.5}"#.to_vec(),
            400,
            "invalid_request",
        ),
        case(
            "negative ttl",
            Some(bearer.clone()),
            br#"{"roles": ["a"], "ttl_seconds": -5}"#.to_vec(),
            400,
            "invalid_request",
        ),
        case("10 MB body", Some(bearer.clone()), vec![b' '; 10 * 1024 * 1024], 413, "payload_too_large"),
        case("no token", None, roles.clone(), 401, "invalid_token"),
        case("not bearer", Some(format!("Basic {token}")), roles.clone(), 401, "invalid_token"),
        case("three dots", Some("Bearer ...".into()), roles.clone(), 401, "invalid_token"),
        case("unicode token", Some("Bearer é.🐙.ü".into()), roles.clone(), 401, "invalid_token"),
        case("64 KiB kid", Some(format!("Bearer {big_kid}.e30.sig")), roles.clone(), 401, "invalid_token"),
    ];
    for Case { what, auth, body, status: want_status, code: want_code } in cases {
        let (status, headers, answer) = post(what, &stack, auth.as_deref(), body).await;
        assert_eq!(status, want_status, "{what}: {answer}");
        assert_eq!(answer["error"], want_code, "{what}: {answer}");
        assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: a message");
        assert!(answer["request_id"].as_str().is_some_and(|id| !id.is_empty()), "{what}: a request id");
        assert_eq!(headers.get("cache-control").map(|v| v.to_str().unwrap()), Some("no-store"), "{what}");
    }
    let health = stack.broker.http().get(format!("{}/healthz", stack.broker.url)).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200, "still serving after all of that");
    assert!(!stack.broker.logs().contains("panicked"), "no panic in the logs");
}

#[tokio::test(flavor = "multi_thread")]
async fn bounds_a_role_name_in_characters_as_the_api_document_does() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    // 128 two-byte characters: within the document's `maxLength`, so a well-formed request that
    // policy then refuses, as it names no such role.
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["é".repeat(128)]})).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("access_denied")), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn survives_a_header_with_a_1_mib_kid() {
    let stack = Stack::start().await;
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": "k".repeat(1024 * 1024)}).to_string());
    let response = stack
        .broker
        .http()
        .post(format!("{}/v1/credentials", stack.broker.url))
        .header("authorization", format!("Bearer {header}.e30.sig"))
        .body(r#"{"roles": ["deploy-prod"]}"#)
        .send()
        .await;
    // The HTTP layer refuses headers this large (431) before the broker reads them, and closes
    // the connection, which the client may see first: either way nothing is granted.
    if let Ok(response) = response {
        assert_eq!(response.status().as_u16(), 431);
    }
    let health = stack.broker.http().get(format!("{}/healthz", stack.broker.url)).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200, "still serving");
    assert!(!stack.broker.logs().contains("panicked"));
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_a_token_from_an_unknown_issuer() {
    let stack = Stack::start().await;
    let stranger = support::start_issuer().await;
    let token = stranger.sign(&support::claims_for(&stranger, "github-token-claims.json", |_| {})).unwrap();
    let (status, body) = stack.broker.exchange(&token, &json!({"roles": ["deploy-prod"]})).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("unknown_issuer")));
    assert_eq!(stranger.jwks_fetches() + stranger.discovery_fetches(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn serves_health_readiness_and_no_store_everywhere() {
    let stack = Stack::start().await;
    for (path, status) in [("/healthz", 200), ("/readyz", 200), ("/nope", 404)] {
        let response = stack.broker.http().get(format!("{}{path}", stack.broker.url)).send().await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{path}");
        assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
    }
    let response = stack.broker.http().get(format!("{}/v1/credentials", stack.broker.url)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "method_not_allowed");
}
