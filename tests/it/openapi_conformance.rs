//! The OpenAPI document: checked in exactly as the code generates it, served at
//! `/openapi.json`, and true of the running broker: requests built from every documented
//! operation, and a real exchange / webhook / revoke scenario, get only documented statuses,
//! with bodies that validate against the document's schemas (JSON Schema 2020-12).

use serde_json::{Value, json};

use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{fixture, github_token};

type Headers = Vec<(&'static str, String)>;

const CHECKED_IN: &str = include_str!("../../openapi/openapi.json");

#[test]
fn checked_in_document_is_current() {
    assert!(
        CHECKED_IN == ci_creds::api::openapi_json(),
        "openapi/openapi.json differs from what the code generates; regenerate it with\n    \
         cargo run -- openapi > openapi/openapi.json"
    );
}

/// The check below is only as good as its `$ref` resolution: an undocumented code must fail it.
#[test]
#[should_panic(expected = "post /v1/credentials 401")]
fn the_check_rejects_an_undocumented_error_code() {
    let mut conformance = Conformance { doc: serde_json::from_str(CHECKED_IN).unwrap(), checked: Vec::new() };
    let body = json!({"error": "no_such_code", "message": "m", "request_id": "r"}).to_string();
    conformance.check("post", "/v1/credentials", 401, &body);
}

struct Conformance {
    doc: Value,
    checked: Vec<String>,
}

impl Conformance {
    /// Asserts `status` is documented for `method path` and `body` fits its schema.
    fn check(&mut self, method: &str, path: &str, status: u16, body: &str) {
        let operation = &self.doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not documented");
        let response = &operation["responses"][status.to_string()];
        assert!(response.is_object(), "{method} {path} answered {status}, which is not documented: {body}");
        let content = response["content"].as_object().expect("documented content");
        let (content_type, media) = content.iter().next().expect("one content type");
        self.checked.push(format!("{method} {path} {status}"));
        if !content_type.starts_with("application/json") {
            return;
        }
        let instance: Value =
            serde_json::from_str(body).unwrap_or_else(|_| panic!("{method} {path}: not JSON: {body}"));
        let mut schema = media["schema"].clone();
        schema["components"] = self.doc["components"].clone();
        let validator = jsonschema::draft202012::new(&schema).expect("the document's schema compiles");
        let errors: Vec<String> = validator.iter_errors(&instance).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{method} {path} {status}: {errors:?}\n{instance:#}");
    }
}

async fn send(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> (u16, String) {
    let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
    let mut request = http.request(method, format!("{base}{path}")).body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().await.expect("broker answers");
    assert_eq!(response.headers()["cache-control"], "no-store");
    (response.status().as_u16(), response.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_running_broker_keeps_to_its_document() {
    // A table of its own name beside the CIs' (`/v1/webhooks/{name}`).
    let stack = Stack::start_with_config(
        "\n[webhooks.actions-team]\nissuer = \"github\"\nsecret_env = \"TEST_GITHUB_WEBHOOK_SECRET\"\n",
    )
    .await;
    let broker = &stack.broker;
    let http = broker.http().clone();
    let (status, served) = send(&http, &broker.url, "get", "/openapi.json", &[], vec![]).await;
    assert_eq!(status, 200);
    assert!(served == CHECKED_IN, "GET /openapi.json does not serve the checked-in document");
    let doc: Value = serde_json::from_str(CHECKED_IN).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut conformance = Conformance { doc: doc.clone(), checked: Vec::new() };

    // Requests built from each documented operation: as documented, and broken in each way the
    // document rules out (no token, a body of the wrong shape, an oversized body).
    let bearer =
        |token: &str| vec![("authorization", format!("Bearer {token}")), ("content-type", "application/json".into())];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let secured = operation.get("security").is_some();
            let mut requests: Vec<(Headers, Vec<u8>)> = vec![(vec![], vec![])];
            if method == "post" {
                requests.push((bearer("not.a.token"), b"{}".to_vec()));
                requests.push((bearer("not.a.token"), br#"{"roles": "read-config"}"#.to_vec()));
                requests.push((bearer("not.a.token"), br#"{"roles": ["read-config"]}"#.to_vec()));
                if operation["responses"].get("413").is_some() {
                    requests.push((bearer("not.a.token"), vec![b'x'; 2 * 1024 * 1024]));
                }
                if secured {
                    let token = github_token(&stack.github, |_| {});
                    requests.push((bearer(&token), br#"{"roles": ["read-config"], "ttl_seconds": 60}"#.to_vec()));
                }
            }
            for (headers, body) in requests {
                let (status, answer) = send(&http, &broker.url, method, path, &headers, body).await;
                conformance.check(method, path, status, &answer);
            }
        }
    }

    // A scenario that reaches the answers random input cannot: grants, denials, replays, job ends.
    // Another job than the fixture's: the loop above has already ended that one (self-revoke).
    let token = github_token(&stack.github, |c| c["check_run_id"] = json!("555"));
    let request = json!({"roles": ["deploy-prod", "read-config"]}).to_string().into_bytes();
    for expected in [200, 409] {
        let (status, answer) =
            send(&http, &broker.url, "post", "/v1/credentials", &bearer(&token), request.clone()).await;
        assert_eq!(status, expected, "{answer}");
        conformance.check("post", "/v1/credentials", status, &answer);
    }
    let denied = github_token(&stack.github, |c| c["ref"] = json!("refs/heads/feature"));
    let (status, answer) = send(&http, &broker.url, "post", "/v1/credentials", &bearer(&denied), request).await;
    assert_eq!(status, 403);
    conformance.check("post", "/v1/credentials", status, &answer);
    let delivery = body(&fixture("github-workflow-job-completed.json"));
    for expected in [200, 202] {
        let headers = github_headers(&delivery, "d-1");
        let (status, answer) =
            send(&http, &broker.url, "post", "/v1/webhooks/github", &headers, delivery.clone()).await;
        assert_eq!(status, expected, "{answer}");
        conformance.check("post", "/v1/webhooks/github", status, &answer);
    }
    for expected in [200, 202] {
        let headers = github_headers(&delivery, "d-2");
        let (status, answer) =
            send(&http, &broker.url, "post", "/v1/webhooks/actions-team", &headers, delivery.clone()).await;
        assert_eq!(status, expected, "{answer}");
        conformance.check("post", "/v1/webhooks/{name}", status, &answer);
    }
    let (status, answer) = send(
        &http,
        &broker.url,
        "post",
        "/v1/credentials",
        &bearer(&denied),
        b"{\"roles\":[\"read-config\"]}".to_vec(),
    )
    .await;
    assert_eq!(status, 409, "the job has ended: {answer}");
    conformance.check("post", "/v1/credentials", status, &answer);
    let (status, answer) = send(&http, &broker.url, "post", "/v1/jobs/self/revoke", &bearer(&denied), vec![]).await;
    assert_eq!(status, 200);
    conformance.check("post", "/v1/jobs/self/revoke", status, &answer);

    for must in [
        "post /v1/credentials 200",
        "post /v1/credentials 403",
        "post /v1/credentials 401",
        "post /v1/credentials 413",
        "post /v1/webhooks/github 202",
        "post /v1/webhooks/gitlab 401",
        "post /v1/webhooks/{name} 202",
        "post /v1/webhooks/{name} 404",
        "get /readyz 200",
        "get /metrics 200",
    ] {
        assert!(conformance.checked.iter().any(|c| c == must), "{must} was never exercised: {:?}", conformance.checked);
    }
}
