//! The broker as a hostile client meets it: slow heads, floods of idle connections, more
//! requests than it may answer at once. Legitimate jobs and health checks get through.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::ci_job::{ci_creds, err};
use crate::support::github_token;
use crate::support::proxy::Mode;
use crate::support::stack::Stack;
use crate::support::{AUDIENCE, wait_until};

/// Beyond a configured timeout, how long a closing may take on a busy 2-core machine.
const MARGIN: Duration = Duration::from_secs(3);
const HALF_A_HEAD: &[u8] = b"POST /v1/credentials HTTP/1.1\r\nHost: broker\r\nContent-Type: app";
const HEALTH_REQUEST: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: broker\r\n\r\n";

async fn connect(stack: &Stack) -> TcpStream {
    TcpStream::connect(stack.broker.url.trim_start_matches("http://")).await.expect("the broker accepts")
}

/// Whether the broker closes `stream` within `limit`, reading (and dropping) anything it sends.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buffer = [0u8; 1024];
    let until_closed = async { while let Ok(1..) = stream.read(&mut buffer).await {} };
    tokio::time::timeout(limit, until_closed).await.is_ok()
}

/// A keep-alive connection that has been answered once and now sits idle.
async fn idle_connection(stack: &Stack) -> TcpStream {
    let mut stream = connect(stack).await;
    stream.write_all(HEALTH_REQUEST).await.expect("request sent");
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") || !answer.ends_with(b"}") {
        let read = stream.read(&mut buffer).await.expect("answer read");
        assert!(read > 0, "the health check was answered");
        answer.extend_from_slice(&buffer[..read]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
    stream
}

async fn half_sent_connection(stack: &Stack) -> TcpStream {
    let mut stream = connect(stack).await;
    stream.write_all(HALF_A_HEAD).await.expect("half a head sent");
    stream
}

async fn open_count(streams: &mut [TcpStream]) -> usize {
    let mut open = 0;
    for stream in streams {
        if !closed_within(stream, Duration::from_millis(20)).await {
            open += 1;
        }
    }
    open
}

/// GETs `path` on a connection of its own, closed after the answer; returns status and body.
async fn get_on_new_connection(stack: &Stack, path: &str) -> (u16, String) {
    let mut stream = connect(stack).await;
    let request = format!("GET {path} HTTP/1.1\r\nHost: broker\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("request sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.expect("answer read");
    let status = answer.get(9..12).and_then(|code| code.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_owned();
    (status, body)
}

/// The value of the metric line starting with `series` (name and labels), or 0.
async fn metric(stack: &Stack, series: &str) -> f64 {
    let (status, text) = get_on_new_connection(stack, "/metrics").await;
    assert_eq!(status, 200, "{text}");
    text.lines().find_map(|line| line.strip_prefix(series)?.trim().parse().ok()).unwrap_or(0.0)
}

/// Exchanges that hold `slots` in-flight slots: OpenBao stops answering, so each waits for the
/// Vault timeout (2 s). Returns once the broker reports them in flight.
async fn hold_in_flight_slots(
    stack: &Stack,
    slots: usize,
) -> Vec<tokio::task::JoinHandle<reqwest::Result<reqwest::Response>>> {
    stack.vault_proxy.set(Mode::BlackHole);
    let stuck = (0..slots)
        .map(|_| {
            let token = github_token(&stack.github, |_| {});
            let http = stack.broker.http().clone();
            let url = format!("{}/v1/credentials", stack.broker.url);
            tokio::spawn(async move {
                http.post(url).bearer_auth(token).json(&json!({ "roles": ["read-config"] })).send().await
            })
        })
        .collect();
    wait_until("the slots are taken", || async { metric(stack, "ci_creds_requests_in_flight").await == slots as f64 })
        .await;
    stuck
}

async fn assert_healthy(stack: &Stack) {
    let (status, body) = get_on_new_connection(stack, "/healthz").await;
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
}

#[tokio::test(flavor = "multi_thread")]
async fn slowloris_heads_are_closed_after_the_header_timeout() {
    let stack = Stack::start_with_config("[limits]\nheader_timeout = \"1s\"\nidle_timeout = \"1s\"").await;
    let header_timeout = Duration::from_secs(1);

    let mut silent = connect(&stack).await;
    let mut half = half_sent_connection(&stack).await;
    let mut idle = idle_connection(&stack).await;
    let mut trickle = connect(&stack).await;
    let trickled = tokio::spawn(async move {
        // A byte every 200 ms: always sending, never finishing the head.
        for byte in HALF_A_HEAD.iter().cycle() {
            if trickle.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut probe = [0u8; 64];
            if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(1), trickle.read(&mut probe)).await {
                return true;
            }
        }
        false
    });

    assert!(closed_within(&mut silent, header_timeout + MARGIN).await, "a connection that sends nothing");
    assert!(closed_within(&mut half, header_timeout + MARGIN).await, "a connection that sent half a head");
    assert!(closed_within(&mut idle, header_timeout + MARGIN).await, "an idle kept-alive connection");
    let trickle_closed = tokio::time::timeout(header_timeout + MARGIN, trickled).await;
    assert!(matches!(trickle_closed, Ok(Ok(true))), "a connection sending its head a byte at a time");

    assert!(metric(&stack, r#"ci_creds_connections_closed_total{limit="header_timeout"}"#).await >= 3.0);
    assert!(metric(&stack, r#"ci_creds_connections_closed_total{limit="idle_timeout"}"#).await >= 1.0);
    assert_healthy(&stack).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_sent_too_slowly_is_answered_408_and_the_connection_closed() {
    let stack = Stack::start_with_config("[limits]\nheader_timeout = \"1s\"\nrequest_timeout = \"2s\"").await;
    let request_timeout = Duration::from_secs(2);
    let mut stream = connect(&stack).await;
    let head = "POST /v1/credentials HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"roles\"";
    stream.write_all(head.as_bytes()).await.expect("head and the start of a body sent");
    let mut answer = String::new();
    let read = tokio::time::timeout(request_timeout + MARGIN, stream.read_to_string(&mut answer)).await;
    assert!(matches!(read, Ok(Ok(_))), "answered and closed within the request timeout: {read:?}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""error":"request_timeout""#), "{answer}");
    assert!(metric(&stack, r#"ci_creds_connections_closed_total{limit="request_timeout"}"#).await >= 1.0);
    assert_healthy(&stack).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_cap_evicts_idle_and_half_sent_connections_for_a_new_exchange() {
    const CAP: usize = 40;
    let stack = Stack::start_with_config(&format!(
        "[limits]\nmax_connections = {CAP}\nmax_in_flight = 8\nheader_timeout = \"60s\"\nidle_timeout = \"60s\"\nrequest_timeout = \"60s\""
    ))
    .await;
    let mut held = Vec::new();
    for _ in 0..CAP / 2 {
        held.push(idle_connection(&stack).await);
    }
    for _ in 0..CAP / 2 {
        held.push(half_sent_connection(&stack).await);
    }
    // As many again: each new one makes the broker close an older one.
    for _ in 0..CAP / 2 {
        held.push(half_sent_connection(&stack).await);
    }
    let all = held.len();
    wait_until("the broker has taken every connection in", || async {
        metric(&stack, r#"ci_creds_connections_closed_total{limit="connection_cap"}"#).await >= (CAP / 2) as f64
    })
    .await;

    let token = github_token(&stack.github, |_| {});
    let (status, answer) = stack.broker.exchange(&token, &json!({ "roles": ["read-config"] })).await;
    assert_eq!(status, 200, "a legitimate exchange on a new connection: {answer}");
    assert_healthy(&stack).await;

    let open = open_count(&mut held).await;
    assert!(open <= CAP, "{open} of {all} connections still open, with a cap of {CAP}");
    assert!(open >= CAP / 2, "only as many closed as room was needed for: {open} open");
    assert!(closed_within(&mut held[0], Duration::from_millis(100)).await, "the oldest idle one went first");
    assert_eq!(metric(&stack, "ci_creds_connections_refused_total").await, 0.0, "none refused: room was made");
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_in_flight_cap_the_answer_is_503_overloaded_with_retry_after() {
    let stack = Stack::start_with_config("[limits]\nmax_in_flight = 2\nin_flight_wait = \"20ms\"").await;
    let stuck = hold_in_flight_slots(&stack, 2).await;

    let token = github_token(&stack.github, |_| {});
    let response = stack
        .broker
        .http()
        .post(format!("{}/v1/credentials", stack.broker.url))
        .bearer_auth(&token)
        .json(&json!({ "roles": ["read-config"] }))
        .send()
        .await
        .expect("the broker answers");
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: serde_json::Value = response.json().await.expect("JSON");
    assert_eq!(body["error"], "overloaded", "{body}");
    assert_healthy(&stack).await;
    assert!(metric(&stack, "ci_creds_requests_overloaded_total").await >= 1.0);

    // The CLI waits what it was told, not its own shorter delay.
    stack.vault_proxy.set(Mode::Forward);
    let output = ci_creds(
        &[
            "get",
            "--broker",
            &stack.broker.url,
            "--audience",
            AUDIENCE,
            "--role",
            "read-config",
            "--retry-delay",
            "10ms",
        ],
        &[("CI_CREDS_TOKEN", token)],
    )
    .await;
    let stderr = err(&output);
    assert!(stderr.contains("HTTP 503 overloaded; retrying in 1s"), "{stderr}");
    for request in stuck {
        let _ = request.await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn health_answers_on_new_connections_while_the_caps_are_full() {
    const CAP: usize = 12;
    let stack = Stack::start_with_config(&format!(
        "[limits]\nmax_connections = {CAP}\nmax_in_flight = 2\nin_flight_wait = \"20ms\"\nheader_timeout = \"60s\"\nidle_timeout = \"60s\"\nrequest_timeout = \"60s\""
    ))
    .await;
    let stuck = hold_in_flight_slots(&stack, 2).await;
    let mut held = Vec::new();
    for _ in 0..CAP * 2 {
        held.push(half_sent_connection(&stack).await);
    }
    for path in ["/healthz", "/metrics", "/healthz"] {
        let (status, _) = get_on_new_connection(&stack, path).await;
        assert_eq!(status, 200, "{path} on a new connection");
    }
    assert!(open_count(&mut held).await <= CAP);
    for request in stuck {
        let _ = request.await;
    }
}
