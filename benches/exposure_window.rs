//! The exposure window: from a job-completion webhook's arrival to the moment OpenBao no longer
//! knows the job's token (`auth/token/lookup-accessor` fails), over many jobs, against a real
//! OpenBao and the broker binary. Run: `cargo bench --bench exposure_window [-- JOBS]`.

#[path = "../tests/it/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::stack::Stack;
use support::webhooks::{body, github_headers};
use support::{fixture, github_token};

const POLL: Duration = Duration::from_millis(2);

#[tokio::main]
async fn main() {
    // Only `cargo bench` passes `--bench`. `cargo test --all-targets` runs this file too, and test
    // runners list its tests: neither is to start a benchmark, and it holds no tests.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let jobs: usize = std::env::args().filter_map(|arg| arg.parse().ok()).next().unwrap_or(200);
    let stack = Stack::start().await;
    let mut windows = Vec::with_capacity(jobs);
    for n in 0..jobs {
        let job_id = 1_000_000 + n as u64;
        let token = github_token(&stack.github, |claims| claims["check_run_id"] = json!(job_id.to_string()));
        let accessor = stack.accessors(&token, &["read-config"]).await.remove(0);
        let mut completed = fixture("github-workflow-job-completed.json");
        completed["workflow_job"]["id"] = json!(job_id);
        let delivery = body(&completed);
        let headers = github_headers(&delivery, &format!("delivery-{job_id}"));

        let arrived = Instant::now();
        let (status, _) = stack.broker.post("/v1/webhooks/github", &headers, delivery).await;
        assert_eq!(status, 200);
        while stack.bao.accessor_alive(&accessor).await {
            assert!(arrived.elapsed() < Duration::from_secs(30), "job {job_id} still has a live token");
            tokio::time::sleep(POLL).await;
        }
        windows.push(arrived.elapsed());
    }
    windows.sort();
    let at = |q: f64| windows[((windows.len() as f64 * q).ceil() as usize).clamp(1, windows.len()) - 1];
    println!(
        "exposure window over {jobs} jobs: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        windows[windows.len() - 1].as_secs_f64() * 1e3,
    );
}
