//! The exposure window: from a job's end to the moment OpenBao no longer knows the job's token
//! (`auth/token/lookup-accessor` fails), over many jobs, against a real OpenBao and the broker
//! binary. Run: `cargo bench --bench exposure_window [-- JOBS]`.
//!
//! By default the end arrives as a completion webhook. With `--reconcile`, no webhook is ever
//! sent: the end is the moment the CI's API (GitHub's, on loopback) starts reporting the job
//! `completed`, and the broker finds it by asking, every `reconcile_interval = 5s`.

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
    if std::env::args().any(|arg| arg == "--reconcile") {
        return reconcile::run(jobs).await;
    }
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
    report("webhook", windows);
}

fn report(how: &str, mut windows: Vec<Duration>) {
    windows.sort();
    let at = |q: f64| windows[((windows.len() as f64 * q).ceil() as usize).clamp(1, windows.len()) - 1];
    println!(
        "exposure window ({how}) over {} jobs: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        windows.len(),
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        windows[windows.len() - 1].as_secs_f64() * 1e3,
    );
}

mod reconcile {
    use std::sync::Arc;

    use super::support::ci_api::JobAnswer;
    use super::support::github_api::{APP_ID, GithubApi};
    use super::*;

    /// The interval the goal names; `reconcile_after` equal to it, so a running job is
    /// asked every round. The budget is raised so that it, not the interval, never defers a job.
    const CONFIG: &str = "[lifecycle]\nreconcile_interval = \"5s\"\nreconcile_after = \"5s\"\n";
    /// Jobs finish spread evenly over this span, so their ends fall at every phase of a round.
    const SPREAD: Duration = Duration::from_secs(20);

    pub async fn run(jobs: usize) {
        let api = Arc::new(GithubApi::start().await);
        let config = format!(
            "[ci_api.github]\napi_url = \"{}\"\napp_id = \"{APP_ID}\"\nprivate_key_env = \"BENCH_CI_API_APP_KEY\"\nmax_calls_per_minute = 5000\n{CONFIG}",
            api.url
        );
        let stack =
            Arc::new(Stack::start_with(&config, "", vec![("BENCH_CI_API_APP_KEY", api.private_key_pem.clone())]).await);
        let mut accessors = Vec::with_capacity(jobs);
        for n in 0..jobs {
            let job_id = (2_000_000 + n).to_string();
            api.set_job(&job_id, JobAnswer::Status("in_progress"));
            let token = github_token(&stack.github, |claims| claims["check_run_id"] = json!(job_id));
            accessors.push((job_id, stack.accessors(&token, &["read-config"]).await.remove(0)));
        }
        // Past `reconcile_after`, every job is in the reconciler's rounds, as a long job is.
        tokio::time::sleep(Duration::from_secs(6)).await;
        let mut ends = tokio::task::JoinSet::new();
        for (n, (job_id, accessor)) in accessors.into_iter().enumerate() {
            let (api, stack) = (api.clone(), stack.clone());
            ends.spawn(async move {
                tokio::time::sleep(SPREAD.mul_f64(n as f64 / jobs as f64)).await;
                api.set_job(&job_id, JobAnswer::Status("completed"));
                let ended = Instant::now();
                while stack.bao.accessor_alive(&accessor).await {
                    assert!(ended.elapsed() < Duration::from_secs(60), "job {job_id} still has a live token");
                    tokio::time::sleep(POLL * 10).await;
                }
                ended.elapsed()
            });
        }
        let windows = ends.join_all().await;
        let reconciled = stack.broker.logs().matches("its completion webhook is missing or failing").count();
        assert_eq!(reconciled, jobs, "every end was found by reconciliation");
        report("reconcile, interval 5 s, no webhook", windows);
    }
}
