//! `GET /metrics` after real exchanges, a webhook and revocations against OpenBao: the values
//! are the ones that happened, and no label carries a job id, token or unlisted repository.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{fixture, github_token};

type Labels = BTreeMap<String, String>;

/// Parses Prometheus text into (name, labels) → value; `# HELP` / `# TYPE` lines are skipped.
fn parse(text: &str) -> BTreeMap<(String, Labels), f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (series, value) = line.rsplit_once(' ').expect("sample line");
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let labels = rest.trim_end_matches('}');
                let labels = labels
                    .split("\",")
                    .filter(|pair| !pair.is_empty())
                    .map(|pair| {
                        let (k, v) = pair.split_once('=').expect("label pair");
                        (k.to_owned(), v.trim_matches('"').to_owned())
                    })
                    .collect();
                (name.to_owned(), labels)
            }
            None => (series.to_owned(), Labels::new()),
        };
        samples.insert((name, labels), value.parse().expect("numeric value"));
    }
    samples
}

fn value(samples: &BTreeMap<(String, Labels), f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let labels: Labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    *samples.get(&(name.to_owned(), labels.clone())).unwrap_or_else(|| panic!("no {name}{labels:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn counts_what_really_happened() {
    let stack = Stack::start().await;
    let broker = &stack.broker;
    let token = github_token(&stack.github, |_| {});
    let (status, _) = broker.exchange(&token, &json!({"roles": ["deploy-prod", "read-config"]})).await;
    assert_eq!(status, 200);
    assert_eq!(broker.exchange(&token, &json!({"roles": ["read-config"]})).await.0, 409);
    let dependabot = github_token(&stack.github, |c| c["actor"] = json!("dependabot[bot]"));
    assert_eq!(broker.exchange(&dependabot, &json!({"roles": ["deploy-prod"]})).await.0, 403);
    let job_id_token = github_token(&stack.github, |_| {});
    assert_eq!(broker.exchange(&job_id_token, &json!({"roles": ["289782451-made-up"]})).await.0, 403);
    assert_eq!(broker.exchange("not.a.token", &json!({"roles": ["read-config"]})).await.0, 401);
    let other_repo = github_token(&stack.github, |c| c["repository"] = json!("octo-org/secret-project"));
    assert_eq!(broker.exchange(&other_repo, &json!({"roles": ["deploy-prod"]})).await.0, 403);

    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let headers = github_headers(&delivery, "d-1");
    assert_eq!(broker.post("/v1/webhooks/github", &headers, delivery.clone()).await.0, 200);
    assert_eq!(broker.post("/v1/webhooks/github", &headers, delivery.clone()).await.0, 202, "redelivery");
    assert_eq!(broker.post("/v1/webhooks/github", &github_headers(b"x", "d-2"), delivery).await.0, 401);

    let done = ("ci_creds_revocations_total".to_owned(), Labels::from([("result".into(), "done".into())]));
    let mut samples = BTreeMap::new();
    for _ in 0..150 {
        let (status, text) = broker.get_text("/metrics").await;
        assert_eq!(status, 200);
        samples = parse(&text);
        if samples.get(&done) == Some(&2.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let settled = samples.get(&done) == Some(&2.0);
    assert!(settled, "two revocations confirmed: {samples:#?}");

    let ex = "ci_creds_exchanges_total";
    let repo = "octo-org/octo-repo";
    assert_eq!(value(&samples, ex, &[("result", "granted"), ("role", "deploy-prod"), ("repository", repo)]), 1.0);
    assert_eq!(value(&samples, ex, &[("result", "granted"), ("role", "read-config"), ("repository", repo)]), 1.0);
    assert_eq!(
        value(&samples, ex, &[("result", "token_replayed"), ("role", "read-config"), ("repository", repo)]),
        1.0
    );
    assert_eq!(value(&samples, ex, &[("result", "access_denied"), ("role", "deploy-prod"), ("repository", repo)]), 1.0);
    assert_eq!(value(&samples, ex, &[("result", "access_denied"), ("role", "undefined"), ("repository", repo)]), 1.0);
    assert_eq!(
        value(&samples, ex, &[("result", "invalid_token"), ("role", "read-config"), ("repository", "unknown")]),
        1.0
    );
    assert_eq!(
        value(&samples, ex, &[("result", "access_denied"), ("role", "deploy-prod"), ("repository", "other")]),
        1.0
    );
    assert_eq!(value(&samples, "ci_creds_exchange_duration_seconds_count", &[("outcome", "granted")]), 1.0);
    assert_eq!(value(&samples, "ci_creds_exchange_duration_seconds_count", &[("outcome", "refused")]), 5.0);

    let wh = "ci_creds_webhook_deliveries_total";
    assert_eq!(value(&samples, wh, &[("ci", "github"), ("webhook", "github"), ("outcome", "ended")]), 1.0);
    assert_eq!(value(&samples, wh, &[("ci", "github"), ("webhook", "github"), ("outcome", "duplicate")]), 1.0);
    assert_eq!(value(&samples, wh, &[("ci", "github"), ("webhook", "github"), ("outcome", "invalid_signature")]), 1.0);

    let backend = [("backend", "vault"), ("operation", "mint")];
    assert_eq!(value(&samples, "ci_creds_backend_request_duration_seconds_count", &backend), 2.0);
    let backend = [("backend", "vault"), ("operation", "revoke")];
    assert_eq!(value(&samples, "ci_creds_backend_request_duration_seconds_count", &backend), 2.0);
    assert_eq!(value(&samples, "ci_creds_revocation_exposure_seconds_count", &[]), 2.0);
    assert!(value(&samples, "ci_creds_revocation_exposure_seconds_sum", &[]) > 0.0);
    assert_eq!(value(&samples, "ci_creds_revocations_pending", &[]), 0.0);
    assert_eq!(value(&samples, "ci_creds_leases", &[("state", "revoked")]), 2.0);
    assert_eq!(value(&samples, "ci_creds_leases", &[("state", "active")]), 0.0);
    assert_eq!(value(&samples, "ci_creds_jobs", &[("state", "ended")]), 1.0);
    assert_eq!(value(&samples, "ci_creds_jwks_fetches_total", &[("issuer", "github"), ("result", "ok")]), 1.0);

    let text = broker.get_text("/metrics").await.1;
    assert!(text.contains("ci_creds_revocation_exposure_seconds_bucket{le=\"3600\"} 2"), "histograms, not summaries");
    assert!(text.contains("ci_creds_exchange_duration_seconds_bucket{outcome=\"granted\",le=\"10\"} 1"));
    for forbidden in ["289782451", "secret-project", token.as_str(), "not.a.token"] {
        assert!(!text.contains(forbidden), "a label carries `{forbidden}`");
    }
}

/// The broker drains histogram samples every few seconds, also when nobody scrapes (else it
/// would keep every sample; the soak benchmark shows the memory). What that upkeep drained must
/// still be counted at the next scrape.
#[tokio::test(flavor = "multi_thread")]
async fn histograms_drained_without_a_scrape_are_still_counted() {
    let stack = Stack::start().await;
    let token = github_token(&stack.github, |_| {});
    assert_eq!(stack.broker.exchange(&token, &json!({"roles": ["read-config"]})).await.0, 200);
    // Longer than the broker's 5 s upkeep interval: it has run at least once before this scrape.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let samples = parse(&stack.broker.get_text("/metrics").await.1);
    assert_eq!(value(&samples, "ci_creds_exchange_duration_seconds_count", &[("outcome", "granted")]), 1.0);
    let backend = [("backend", "vault"), ("operation", "mint")];
    assert_eq!(value(&samples, "ci_creds_backend_request_duration_seconds_count", &backend), 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_static_token_that_cannot_be_renewed_shows_its_life_and_is_warned_about() {
    use crate::support::login_stack::{LoginStack, TOKEN_ROLE, bao_for_the_broker, broker_token};

    let bao = bao_for_the_broker().await;
    let (token, _) = broker_token(&bao, json!({ "ttl": "1h", "renewable": false })).await;
    let stack =
        LoginStack::start(&bao, &format!("token_role = \"{TOKEN_ROLE}\"\n"), vec![("TEST_VAULT_TOKEN", token)]).await;
    let ttl_series = ("ci_creds_vault_token_ttl_seconds".to_owned(), Labels::new());
    let mut samples = BTreeMap::new();
    for _ in 0..150 {
        samples = parse(&stack.broker.get_text("/metrics").await.1);
        if samples.contains_key(&ttl_series) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(value(&samples, "ci_creds_vault_token_renewable", &[]), 0.0);
    let ttl = value(&samples, "ci_creds_vault_token_ttl_seconds", &[]);
    assert!((3000.0..=3600.0).contains(&ttl), "ttl {ttl}");
    let logs = stack.broker.logs();
    let warning = logs.lines().find(|line| line.contains("cannot be renewed")).expect("a warning");
    assert!(warning.contains("WARN") && warning.contains("expires_at="), "{warning}");
}
