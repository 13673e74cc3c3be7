//! The fleet report on a known history of real exchanges: `runners list`, `runners report` as
//! JSON, the figures on /metrics, and the HTML page rendered by a real headless browser that
//! fetches nothing.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support::stack::Stack;
use crate::support::{claims_for, eventually, github_token};

const TIERS: &str = r#"  - name: ephemeral
    single_use: true
    match: { issuer: buildkite, runner_queue: ephemeral }
"#;

/// A Buildkite job of `pipeline` on self-hosted agent `agent` in `queue`.
fn buildkite_token(stack: &Stack, job_id: &str, agent: &str, queue: &str, pipeline: &str) -> String {
    let claims = claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| {
        c["job_id"] = json!(job_id);
        c["agent_id"] = json!(agent);
        c["queue_key"] = json!(queue);
        c["pipeline_slug"] = json!(pipeline);
        c["runner_environment"] = json!("self-hosted");
    });
    stack.buildkite.sign(&claims).unwrap()
}

/// Five self-hosted Buildkite jobs and one GitHub-hosted: agent-a serves two single-use jobs (the
/// second refused), agent-b one, and the persistent agent-p two pipelines.
async fn known_history(stack: &Stack) {
    let read = json!({"roles": ["read-config"]});
    let history = [
        ("bk-1", "agent-a", "ephemeral", "super-duper-app", 200),
        ("bk-2", "agent-a", "ephemeral", "super-duper-app", 403),
        ("bk-3", "agent-b", "ephemeral", "super-duper-app", 200),
        ("bk-4", "agent-p", "default", "super-duper-app", 200),
        ("bk-5", "agent-p", "default", "other-app", 200),
    ];
    for (job, agent, queue, pipeline, expected) in history {
        let (status, answer) = stack.broker.exchange(&buildkite_token(stack, job, agent, queue, pipeline), &read).await;
        assert_eq!(status, expected, "{job}: {answer}");
    }
    let hosted = github_token(&stack.github, |_| {});
    assert_eq!(stack.broker.exchange(&hosted, &read).await.0, 200);
}

fn report(stack: &Stack) -> Value {
    serde_json::from_str(&stack.broker.cli(&["runners", "report", "--format", "json"])).unwrap()
}

fn figure(report: &Value, name: &str) -> (Value, Value) {
    let figures = report["summary"]["figures"].as_array().unwrap();
    let figure = figures.iter().find(|f| f["name"] == name).unwrap();
    (figure["value"].clone(), figure["met"].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_report_s_figures_on_a_known_history() {
    let stack = Stack::start_with_policy(None, "", TIERS, "", Vec::new()).await;
    known_history(&stack).await;
    assert!(eventually(|| async { report(&stack)["summary"]["jobs"] == 6 }).await, "every judged job is recorded");
    let report = report(&stack);
    assert_eq!(report["summary"]["self_hosted_jobs"], 5);
    assert_eq!(figure(&report, "single_use_share"), (json!(0.6), json!(false)), "3 of 5, refused bk-2 included");
    assert_eq!(figure(&report, "multi_repository_runners"), (json!(1.0), json!(false)), "agent-p");
    assert_eq!(figure(&report, "reused_single_use_runners"), (json!(1.0), json!(false)), "agent-a");
    assert_eq!(figure(&report, "stale_persistent_runners"), (json!(0.0), json!(true)));
    let tiers = report["summary"]["tiers"].as_array().unwrap();
    let ephemeral = tiers.iter().find(|t| t["tier"] == "ephemeral").unwrap();
    assert_eq!((&ephemeral["jobs"], &ephemeral["roles_granted"]), (&json!(3), &json!(2)));

    let runners = report["runners"].as_array().unwrap();
    let agent = |key: &str| runners.iter().find(|r| r["key"] == key).cloned().unwrap_or(Value::Null);
    assert_eq!((&agent("agent-a")["jobs"], &agent("agent-a")["reused"]), (&json!(2), &json!(true)));
    assert_eq!((&agent("agent-p")["repositories"], &agent("agent-p")["single_use"]), (&json!(2), &json!(false)));
    assert!(runners.iter().any(|r| r["issuer"] == "github" && r["environment"] == "github-hosted"), "hosted ones too");

    let listed = stack.broker.cli(&["runners", "list"]);
    let line = listed.lines().find(|line| line.contains("agent-a")).unwrap_or_default();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert!(cells.starts_with(&["buildkite", "agent-a", "ephemeral"]), "{listed}");
    assert!(cells.ends_with(&["2", "1", "yes", "yes"]), "2 jobs, 1 repository, single-use, reused: {listed}");

    // The fleet's figures are refreshed in the background (every second in these tests).
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = stack.broker.get_text("/metrics").await.1;
        if metrics.lines().any(|line| line == r#"ci_creds_runner_jobs_30d{tier="ephemeral"} 3"#) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for series in [
        r#"ci_creds_runner_hygiene{figure="single_use_share"} 0.6"#,
        r#"ci_creds_runner_hygiene{figure="reused_single_use_runners"} 1"#,
        r#"ci_creds_runner_hygiene_met{figure="stale_persistent_runners"} 1"#,
        r#"ci_creds_runner_jobs_30d{tier="ephemeral"} 3"#,
    ] {
        assert!(metrics.lines().any(|line| line == series), "{series} in\n{metrics}");
    }
}

/// Serves `page` at `/report.html` on loopback, recording every path asked for.
async fn serve_page(page: String) -> (String, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let recorded = asked.clone();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let (asked, page) = (recorded.clone(), page.clone());
        async move {
            asked.lock().unwrap().push(uri.path().to_owned());
            ([("content-type", "text/html; charset=utf-8")], page)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/report.html", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, asked)
}

fn chromium() -> &'static str {
    let path = "/usr/bin/chromium";
    assert!(Path::new(path).exists(), "Debian's chromium is needed: scripts/test.sh installs it");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn the_html_page_renders_in_a_headless_browser_and_fetches_nothing() {
    let stack = Stack::start_with_policy(None, "", TIERS, "", Vec::new()).await;
    known_history(&stack).await;
    assert!(eventually(|| async { report(&stack)["summary"]["jobs"] == 6 }).await);
    let file = stack.broker.dir.path().join("report.html");
    stack.broker.cli(&["runners", "report", "--format", "html", "--output", file.to_str().unwrap()]);
    let (url, asked) = serve_page(std::fs::read_to_string(&file).unwrap()).await;

    let profile = tempfile::tempdir().unwrap();
    let browser = chromium();
    let url_for_browser = url.clone();
    let profile_dir = format!("--user-data-dir={}", profile.path().display());
    let output = tokio::task::spawn_blocking(move || {
        Command::new(browser)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .arg(profile_dir)
            .args(["--virtual-time-budget=2000", "--dump-dom", &url_for_browser])
            .output()
            .expect("chromium runs")
    })
    .await
    .unwrap();
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(dom.contains("<h1>Runner report</h1>"), "rendered: {dom}");
    for shown in
        ["60.0 %", "share of self-hosted jobs that ran on single-use tiers", "MISSED", "agent-p", "<svg id=\"chart\""]
    {
        assert!(dom.contains(shown), "the page shows {shown}: {dom}");
    }
    assert_eq!(*asked.lock().unwrap(), ["/report.html"], "the page itself, and nothing else");
}

/// Each kind of refusal the broker can tell a runner by is counted against that runner, by
/// reason; replays and an ended job asking again make it suspicious.
#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_is_counted_against_its_runner() {
    let stack = Stack::start_with_policy(None, "", TIERS, "", Vec::new()).await;
    let read = json!({"roles": ["read-config"]});
    let exchange = |token: String, body: Value| {
        let stack = &stack;
        async move { stack.broker.exchange(&token, &body).await }
    };
    let error = |(status, answer): (u16, Value)| (status, answer["error"].as_str().unwrap_or_default().to_owned());

    let first = buildkite_token(&stack, "bk-1", "agent-a", "ephemeral", "super-duper-app");
    assert_eq!(exchange(first.clone(), read.clone()).await.0, 200);
    assert_eq!(error(exchange(first.clone(), read.clone()).await), (409, "token_replayed".into()));
    let second = buildkite_token(&stack, "bk-2", "agent-a", "ephemeral", "super-duper-app");
    assert_eq!(error(exchange(second, read.clone()).await), (403, "runner_reused".into()));
    let undefined = buildkite_token(&stack, "bk-3", "agent-p", "default", "super-duper-app");
    assert_eq!(error(exchange(undefined, json!({"roles": ["made-up"]})).await), (403, "access_denied".into()));

    let ending = buildkite_token(&stack, "bk-4", "agent-e", "default", "super-duper-app");
    assert_eq!(exchange(ending.clone(), read.clone()).await.0, 200);
    let bearer = vec![("authorization", format!("Bearer {ending}"))];
    assert_eq!(stack.broker.post("/v1/jobs/self/revoke", &bearer, vec![]).await.0, 200);
    let again = claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| {
        c["job_id"] = json!("bk-4");
        c["agent_id"] = json!("agent-e");
        c["queue_key"] = json!("default");
        c["runner_environment"] = json!("self-hosted");
        c["jti"] = json!("another-token-of-bk-4");
    });
    let again = stack.buildkite.sign(&again).unwrap();
    assert_eq!(error(exchange(again, read.clone()).await), (409, "job_ended".into()));

    let claims = claims_for(&stack.buildkite, "buildkite-token-claims.json", |c| {
        c["job_id"] = json!("bk-5");
        c["queue_key"] = json!("ephemeral");
        c["runner_environment"] = json!("self-hosted");
        c.as_object_mut().unwrap().remove("agent_id");
    });
    let untold = stack.buildkite.sign(&claims).unwrap();
    assert_eq!(error(exchange(untold, read.clone()).await), (403, "runner_unknown".into()));

    let counted = |report: &Value, key: &str| {
        let runners = report["runners"].as_array().cloned().unwrap_or_default();
        runners.iter().find(|r| r["key"] == key).map(|r| r["refused"].clone()).unwrap_or(Value::Null)
    };
    assert!(
        eventually(|| async { counted(&report(&stack), "agent-e") == json!({"job_ended": 1}) }).await,
        "{}",
        report(&stack)
    );
    let report = report(&stack);
    assert_eq!(counted(&report, "agent-a"), json!({"replayed": 1, "runner_reused": 1}));
    assert_eq!(counted(&report, "agent-p"), json!({"policy": 1}));
    assert_eq!(figure(&report, "suspicious_attempt_runners"), (json!(2.0), json!(false)), "agent-a and agent-e");

    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = stack.broker.get_text("/metrics").await.1;
        if metrics.lines().any(|line| line == r#"ci_creds_runner_hygiene{figure="suspicious_attempt_runners"} 2"#) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for reason in ["replayed", "job_ended", "runner_reused", "runner_unknown", "policy"] {
        let series = format!("ci_creds_runner_refusals_total{{reason=\"{reason}\"}} 1");
        assert!(metrics.lines().any(|line| line == series), "{series} in\n{metrics}");
    }
    assert!(metrics.lines().any(|line| line == r#"ci_creds_runner_hygiene{figure="suspicious_attempt_runners"} 2"#));
}

/// `runners list` and `runners report` filter and limit the runners, the worst first, and count
/// the rest; the figures stay the whole fleet's.
#[tokio::test(flavor = "multi_thread")]
async fn filters_and_a_limit_show_the_worst_runners_first() {
    let stack = Stack::start_with_policy(None, "", TIERS, "", Vec::new()).await;
    known_history(&stack).await;
    assert!(eventually(|| async { report(&stack)["summary"]["jobs"] == 6 }).await);
    let listed = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["runners", "list", "--format", "json"];
        all.extend_from_slice(args);
        serde_json::from_str(&stack.broker.cli(&all)).unwrap()
    };
    let keys = |runners: Vec<Value>| runners.iter().map(|r| r["key"].as_str().unwrap_or("").to_owned()).collect();
    let worst: Vec<String> = keys(listed(&["--missing-target"]));
    assert_eq!(worst.len(), 2, "{worst:?}");
    assert!(worst.contains(&"agent-a".to_owned()) && worst.contains(&"agent-p".to_owned()), "{worst:?}");
    let first: Vec<String> = keys(listed(&["--limit", "2"]));
    assert_eq!(first.iter().filter(|k| *k == "agent-a" || *k == "agent-p").count(), 2, "worst first: {first:?}");
    assert!(listed(&["--issuer", "github", "--self-hosted"]).is_empty());
    assert_eq!(keys(listed(&["--tier", "ephemeral", "--issuer", "buildkite"])).len(), 2, "agent-a and agent-b");

    let report: Value = serde_json::from_str(&stack.broker.cli(&[
        "runners",
        "report",
        "--format",
        "json",
        "--missing-target",
        "--limit",
        "1",
    ]))
    .unwrap();
    assert_eq!((report["runners"].as_array().map(Vec::len), &report["runners_not_shown"]), (Some(1), &json!(3)));
    assert_eq!(report["summary"]["jobs"], 6, "the figures stay the whole fleet's");
}
