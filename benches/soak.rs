//! Soak: many jobs through exchange → completion webhook → revocation, at a fixed rate, against a
//! real OpenBao and the broker binary. Reports the broker's RSS and the store's size over time
//! (both must level off once the sweeper prunes) and the exposure window on a sample of jobs.
//! Run: `cargo bench --bench soak -- [--jobs 1000000] [--rate 300] [--sample-every 100]`.

#[path = "../tests/it/support/mod.rs"]
mod support;

#[path = "soak/probe.rs"]
mod probe;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::bao::Bao;
use support::broker::{Broker, Setup};
use support::stack::READ_CONFIG_HCL;
use support::webhooks::{body, github_headers};
use support::{fixture, github_token, start_issuer};
use tokio::sync::{Mutex, Semaphore};

use probe::{Sample, percentile};

/// One role, the size of what a job usually asks for; records outlive a job by a minute only, so
/// the store reaches its steady size within minutes.
const POLICY: &str = r#"
roles:
  - name: ci-job
    backend: vault
    max_ttl: 2m
    vault:
      policies: [read-config]
    allow:
      - issuer: github
        repository_id: "74"
"#;

const CONFIG: &str = r#"
[webhooks.github]
issuer = "github"
secret_env = "TEST_GITHUB_WEBHOOK_SECRET"

[lifecycle]
retention = "1m"
sweep_interval = "10s"

[audit]
file = "audit.jsonl"
"#;

/// Job ids start here so they never collide with a fixture's own.
const FIRST_JOB_ID: u64 = 10_000_000;
const MAX_IN_FLIGHT: usize = 512;
const POLL: Duration = Duration::from_millis(5);
const GIVE_UP: Duration = Duration::from_secs(120);

struct Options {
    jobs: u64,
    rate: f64,
    sample_every: u64,
    report_every: Duration,
}

impl Options {
    fn from_args() -> Self {
        let mut options =
            Self { jobs: 1_000_000, rate: 300.0, sample_every: 100, report_every: Duration::from_secs(30) };
        let args: Vec<String> = std::env::args().collect();
        for pair in args.windows(2) {
            let value = &pair[1];
            match pair[0].as_str() {
                "--jobs" => options.jobs = value.parse().expect("--jobs N"),
                "--rate" => options.rate = value.parse().expect("--rate JOBS_PER_SECOND"),
                "--sample-every" => options.sample_every = value.parse::<u64>().expect("--sample-every K").max(1),
                "--report-every" => {
                    options.report_every = Duration::from_secs(value.parse().expect("--report-every S"))
                }
                _ => {}
            }
        }
        options
    }
}

struct Soak {
    broker: Broker,
    bao: Bao,
    issuer: Arc<ci_creds::dev::DevIssuer>,
    completed_template: Value,
    done: AtomicU64,
    failures: Mutex<Vec<String>>,
    /// Each sampled job's exposure window, with when (since the start) it closed.
    windows: Mutex<Vec<(Duration, Duration)>>,
}

#[tokio::main]
async fn main() {
    // Only `cargo bench` passes `--bench`. `cargo test --all-targets` runs this file too, and test
    // runners list its tests: neither is to start a benchmark, and it holds no tests.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let options = Options::from_args();
    let bao = Bao::start().await;
    bao.put_policy("read-config", READ_CONFIG_HCL).await;
    let issuer = start_issuer().await;
    let broker = Broker::start(&Setup {
        issuers: vec![("github", "github", issuer.url())],
        vault_address: &bao.address,
        policy: POLICY,
        extra_config: CONFIG,
        store_url: None,
        // Info lines for a million jobs would measure the log file, not the broker; the
        // listening line stays, for the port.
        env: vec![("RUST_LOG", "warn,ci_creds::server=info".to_owned())],
    })
    .await;
    let soak = Arc::new(Soak {
        broker,
        bao,
        issuer,
        completed_template: fixture("github-workflow-job-completed.json"),
        done: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
        windows: Mutex::new(Vec::new()),
    });
    println!(
        "soak: {} jobs at {} jobs/s, exposure window sampled every {} jobs",
        options.jobs, options.rate, options.sample_every
    );
    let started = Instant::now();
    let samples = Arc::new(Mutex::new(Vec::new()));
    let quarter = Duration::from_secs_f64(options.jobs as f64 / options.rate / 4.0);
    let reporter = tokio::spawn(report(soak.clone(), samples.clone(), started, options.report_every));
    drive(&soak, &options, started).await;
    reporter.abort();
    let drained = probe::until_drained(&soak.broker.database()).await;
    let last = Sample::take(&soak.broker, started, soak.done.load(Ordering::Relaxed)).await;
    println!("{last}  (all jobs done; revocation queue drained in {:.1} s)", drained.as_secs_f64());
    samples.lock().await.push(last);
    let (_, metrics) = soak.broker.get_text("/metrics").await;
    summarize(&soak, &samples.lock().await, started.elapsed(), quarter).await;
    println!("as the broker measured it:\n{}", probe::timings(&metrics));
}

/// Starts jobs on schedule, at most `MAX_IN_FLIGHT` at once: when the broker falls behind, the
/// achieved rate in the reports shows it.
async fn drive(soak: &Arc<Soak>, options: &Options, started: Instant) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    for n in 0..options.jobs {
        let due = started + Duration::from_secs_f64(n as f64 / options.rate);
        tokio::time::sleep_until(due.into()).await;
        let permit = in_flight.clone().acquire_owned().await.expect("semaphore open");
        let soak = soak.clone();
        let sampled = n % options.sample_every == 0;
        tokio::spawn(async move {
            match run_job(&soak, FIRST_JOB_ID + n, sampled).await {
                Ok(Some(window)) => soak.windows.lock().await.push((started.elapsed(), window)),
                Ok(None) => {}
                Err(failure) => soak.failures.lock().await.push(failure),
            }
            soak.done.fetch_add(1, Ordering::Relaxed);
            drop(permit);
        });
    }
    let _all_done = in_flight.acquire_many(MAX_IN_FLIGHT as u32).await.expect("semaphore open");
}

/// One job's life; for a sampled job, the time from the webhook's arrival until OpenBao no
/// longer knows the job's token.
async fn run_job(soak: &Soak, job_id: u64, sampled: bool) -> Result<Option<Duration>, String> {
    let token = github_token(&soak.issuer, |claims| claims["check_run_id"] = json!(job_id.to_string()));
    let response = soak
        .broker
        .http()
        .post(format!("{}/v1/credentials", soak.broker.url))
        .bearer_auth(&token)
        .json(&json!({ "roles": ["ci-job"] }))
        .send()
        .await
        .map_err(|e| format!("job {job_id}: exchange: {e}"))?;
    let status = response.status();
    let answer: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(format!("job {job_id}: exchange answered {status}: {}", answer["error"]));
    }
    let accessor = answer["credentials"][0]["vault"]["accessor"].as_str().unwrap_or_default().to_owned();

    let mut completed = soak.completed_template.clone();
    completed["workflow_job"]["id"] = json!(job_id);
    let delivery = body(&completed);
    let headers = github_headers(&delivery, &format!("soak-{job_id}"));
    let mut request = soak.broker.http().post(format!("{}/v1/webhooks/github", soak.broker.url)).body(delivery);
    for (name, value) in &headers {
        request = request.header(*name, value);
    }
    let arrived = Instant::now();
    let status = request.send().await.map_err(|e| format!("job {job_id}: webhook: {e}"))?.status();
    if !status.is_success() {
        return Err(format!("job {job_id}: webhook answered {status}"));
    }
    if !sampled {
        return Ok(None);
    }
    while soak.bao.accessor_alive(&accessor).await {
        if arrived.elapsed() > GIVE_UP {
            return Err(format!("job {job_id}: token alive {GIVE_UP:?} after the webhook"));
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(Some(arrived.elapsed()))
}

/// Every `every`: the broker's levels, and the exposure window so far and over the last period
/// alone (a disturbance shows in the latter, then fades from the former).
async fn report(soak: Arc<Soak>, samples: Arc<Mutex<Vec<Sample>>>, started: Instant, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let sample = Sample::take(&soak.broker, started, soak.done.load(Ordering::Relaxed)).await;
        let windows = soak.windows.lock().await.clone();
        let period_start = started.elapsed().saturating_sub(every);
        match (exposure(windows.iter()), exposure(windows.iter().filter(|(at, _)| *at > period_start))) {
            (Some(so_far), Some(last)) => {
                println!("{sample} exposure p50/p99 {so_far}, last {}s {last}", every.as_secs())
            }
            (Some(so_far), None) => println!("{sample} exposure p50/p99 {so_far}"),
            _ => println!("{sample}"),
        }
        samples.lock().await.push(sample);
    }
}

/// `p50/p99 ms` of the windows given, if any.
fn exposure<'a>(windows: impl Iterator<Item = &'a (Duration, Duration)>) -> Option<String> {
    let mut windows: Vec<Duration> = windows.map(|(_, window)| *window).collect();
    windows.sort();
    let ms = |fraction| percentile(&windows, fraction).as_secs_f64() * 1e3;
    (!windows.is_empty()).then(|| format!("{:.0}/{:.0}ms", ms(0.50), ms(0.99)))
}

async fn summarize(soak: &Soak, samples: &[Sample], elapsed: Duration, quarter: Duration) {
    let done = soak.done.load(Ordering::Relaxed);
    let failures = soak.failures.lock().await;
    println!(
        "\n{done} jobs in {:.0} s: {:.1} jobs/s achieved",
        elapsed.as_secs_f64(),
        done as f64 / elapsed.as_secs_f64()
    );
    println!("failures: {}", failures.len());
    for failure in failures.iter().take(5) {
        println!("  {failure}");
    }
    let windows = soak.windows.lock().await.clone();
    let mut all: Vec<Duration> = windows.iter().map(|(_, window)| *window).collect();
    all.sort();
    if let Some(max) = all.last() {
        println!(
            "exposure window over {} sampled jobs: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            all.len(),
            percentile(&all, 0.50).as_secs_f64() * 1e3,
            percentile(&all, 0.99).as_secs_f64() * 1e3,
            max.as_secs_f64() * 1e3,
        );
        for n in 0..4u32 {
            let (from, to) = (quarter * n, quarter * (n + 1));
            let within = windows.iter().filter(|(at, _)| *at > from && (*at <= to || n == 3));
            if let Some(p50_p99) = exposure(within) {
                println!("  Q{}: p50/p99 {p50_p99}", n + 1);
            }
        }
    }
    println!("{}", probe::levels(samples));
}
