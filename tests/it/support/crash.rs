//! The crash scenario: the broker binary under concurrent exchanges, killed with SIGKILL at random
//! moments and restarted; then every job ended by its signed completion webhook, the revocation
//! queue drained, and OpenBao asked which job tokens still live. Shared by the suite's crash test
//! (a few cycles) and `benches/crash/run.sh` (many, against the release build).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use ci_creds::backends::RevokeHandle;
use ci_creds::dev::DevIssuer;
use ci_creds::store::{LeaseState, Store};
use serde_json::{Value, json};

use super::bao::ROOT_TOKEN;
use super::stack::Stack;
use super::webhooks::{body, github_headers};
use super::{fixture, github_token};

pub struct Scenario {
    pub cycles: usize,
    /// Jobs exchanging at once.
    pub workers: usize,
    /// `[vault] mint_grace_seconds`.
    pub grace_seconds: u64,
    /// How long the broker runs before each kill: between these, in milliseconds, at random.
    pub uptime_ms: (u64, u64),
}

#[derive(Debug)]
pub struct Outcome {
    pub kills: usize,
    /// Jobs that asked for credentials (each with one token, for two roles).
    pub jobs: usize,
    /// Exchanges answered with credentials.
    pub granted: usize,
    /// A job answered with credentials twice, an accessor handed out twice, or an answer with a
    /// role twice.
    pub duplicated: usize,
    /// Jobs whose end the store does not hold, though its webhook was answered 200.
    pub lost_ends: Vec<String>,
    /// Leases still pending, active or being revoked once the queue had drained (or the wait
    /// for it ended).
    pub left_open: i64,
    /// Job tokens alive in OpenBao just after a kill whose accessors the store does not hold:
    /// made by the killed broker before it recorded them, so nothing can revoke them.
    pub unrecorded: usize,
    /// The longest any kill's unrecorded tokens lived after it: the recovery bound as measured.
    pub recovery: Duration,
    /// Job tokens alive at the end, once every job had ended, the queue had drained and every
    /// unrecorded token had died (or been waited for past its grace and a margin).
    pub alive_after: usize,
}

/// What the workers share with the test: where the broker listens now, and what they saw.
struct Shared {
    url: RwLock<String>,
    stop: AtomicBool,
    next_job: AtomicU64,
    /// Per job, the accessors of every answer that handed credentials.
    handed: Mutex<BTreeMap<String, Vec<Vec<String>>>>,
    /// Answers whose credentials named a role twice.
    doubled_roles: AtomicU64,
    jobs: Mutex<Vec<String>>,
}

pub const ROLES: [&str; 2] = ["deploy-prod", "read-config"];

pub async fn run(scenario: &Scenario) -> Outcome {
    let config = format!("[vault]\nmint_grace_seconds = {}\n", scenario.grace_seconds);
    // Info, not the suite's trace: a trace log per exchange costs the broker more than the exchange.
    let mut stack = Stack::start_with(&config, "", vec![("RUST_LOG", "info".into())]).await;
    let shared = Arc::new(Shared {
        url: RwLock::new(stack.broker.url.clone()),
        stop: AtomicBool::new(false),
        next_job: AtomicU64::new(1_000_000),
        handed: Mutex::new(BTreeMap::new()),
        doubled_roles: AtomicU64::new(0),
        jobs: Mutex::new(Vec::new()),
    });
    let workers: Vec<_> =
        (0..scenario.workers).map(|_| tokio::spawn(work(shared.clone(), stack.github.clone()))).collect();

    let orphan_limit = Duration::from_secs(scenario.grace_seconds + 30);
    let mut watchers = Vec::new();
    let mut unrecorded = 0;
    let mut counted = BTreeSet::new();
    let mut last_kill = Instant::now();
    for _ in 0..scenario.cycles {
        tokio::time::sleep(Duration::from_millis(random_between(scenario.uptime_ms))).await;
        stack.broker.stop();
        let killed = Instant::now();
        last_kill = killed;
        // Vault finishes a create the broker sent just before it died.
        tokio::time::sleep(Duration::from_millis(50)).await;
        // An earlier kill's orphans may live on into this one: each is counted once.
        let orphans: Vec<String> =
            unrecorded_tokens(&stack).await.into_iter().filter(|accessor| counted.insert(accessor.clone())).collect();
        unrecorded += orphans.len();
        watchers.push(tokio::spawn(until_gone(stack.bao.address.clone(), orphans, killed, orphan_limit)));
        stack.broker.spawn().await;
        *shared.url.write().unwrap() = stack.broker.url.clone();
    }
    // Exchanges on the last broker, which never dies, before every job has ended.
    tokio::time::sleep(Duration::from_millis(random_between(scenario.uptime_ms))).await;
    shared.stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.expect("a worker panicked");
    }

    let store = stack.store().await;
    let left_open = until_drained(&store, Duration::from_secs(60)).await;
    let jobs = shared.jobs.lock().unwrap().clone();
    let mut lost_ends = Vec::new();
    for job in &jobs {
        if !store.job_ended("github", job).await.expect("store readable") {
            lost_ends.push(job.clone());
        }
    }
    let mut recovery = Duration::ZERO;
    for watcher in watchers {
        recovery = recovery.max(watcher.await.expect("a watcher panicked"));
    }
    // A token whose create Vault finished after a kill's count is in no watcher's list: it too
    // must be gone within its grace.
    let mut alive_after = stack.bao.job_tokens().await.len();
    while alive_after > 0 && last_kill.elapsed() < orphan_limit {
        tokio::time::sleep(Duration::from_millis(250)).await;
        alive_after = stack.bao.job_tokens().await.len();
    }

    let handed = shared.handed.lock().unwrap();
    let granted = handed.values().map(Vec::len).sum();
    let twice_to_a_job = handed.values().filter(|answers| answers.len() > 1).count();
    let all: Vec<&String> = handed.values().flatten().flatten().collect();
    let distinct: BTreeSet<&String> = all.iter().copied().collect();
    let duplicated =
        twice_to_a_job + (all.len() - distinct.len()) + shared.doubled_roles.load(Ordering::Relaxed) as usize;
    Outcome {
        kills: scenario.cycles,
        jobs: jobs.len(),
        granted,
        duplicated,
        lost_ends,
        left_open,
        unrecorded,
        recovery,
        alive_after,
    }
}

/// One job after another, until told to stop: exchange its token (again after a transport error:
/// the same token, as a job retrying would), then end it by its webhook, until answered 200.
async fn work(shared: Arc<Shared>, github: Arc<DevIssuer>) {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    while !shared.stop.load(Ordering::Relaxed) {
        let job = shared.next_job.fetch_add(1, Ordering::Relaxed).to_string();
        shared.jobs.lock().unwrap().push(job.clone());
        let token = github_token(&github, |claims| claims["check_run_id"] = json!(job));
        let answer = loop {
            let url = shared.url.read().unwrap().clone();
            let sent = http
                .post(format!("{url}/v1/credentials"))
                .bearer_auth(&token)
                .json(&json!({ "roles": ROLES }))
                .send()
                .await;
            match sent {
                Ok(response) => break (response.status().as_u16(), response.json::<Value>().await.ok()),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        if let (200, Some(credentials)) = answer {
            record_handed(&shared, &job, &credentials);
        }
        end(&shared, &http, &job).await;
    }
}

fn record_handed(shared: &Shared, job: &str, answer: &Value) {
    let credentials = answer["credentials"].as_array().cloned().unwrap_or_default();
    let roles: BTreeSet<&str> = credentials.iter().filter_map(|c| c["role"].as_str()).collect();
    if roles.len() != credentials.len() {
        shared.doubled_roles.fetch_add(1, Ordering::Relaxed);
    }
    let accessors = credentials.iter().filter_map(|c| c["vault"]["accessor"].as_str().map(str::to_owned)).collect();
    shared.handed.lock().unwrap().entry(job.to_owned()).or_default().push(accessors);
}

/// Delivers the job's signed completion webhook until the broker answers 200.
async fn end(shared: &Shared, http: &reqwest::Client, job: &str) {
    let mut delivery = fixture("github-workflow-job-completed.json");
    delivery["workflow_job"]["id"] = json!(job.parse::<u64>().unwrap());
    let payload = body(&delivery);
    let headers = github_headers(&payload, &format!("end-{job}"));
    loop {
        let url = shared.url.read().unwrap().clone();
        let mut request = http.post(format!("{url}/v1/webhooks/github")).body(payload.clone());
        for (name, value) in &headers {
            request = request.header(*name, value);
        }
        if request.send().await.is_ok_and(|response| response.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The job tokens alive in OpenBao whose accessors the (stopped) broker's store does not hold.
async fn unrecorded_tokens(stack: &Stack) -> Vec<String> {
    let store = stack.store().await;
    let recorded: BTreeSet<String> = store
        .leases(None, i64::MAX)
        .await
        .expect("store readable")
        .into_iter()
        .filter_map(|lease| match lease.handle {
            Some(RevokeHandle::Vault { accessor }) => Some(accessor),
            _ => None,
        })
        .collect();
    let alive = stack.bao.job_tokens().await;
    alive.into_iter().map(|(accessor, _)| accessor).filter(|accessor| !recorded.contains(accessor)).collect()
}

/// Polls OpenBao until none of `accessors` is alive, or `limit` after `killed`; returns how long
/// after `killed` the last one lived.
async fn until_gone(address: String, accessors: Vec<String>, killed: Instant, limit: Duration) -> Duration {
    if accessors.is_empty() {
        return Duration::ZERO;
    }
    let http = reqwest::Client::new();
    let mut alive = accessors;
    while !alive.is_empty() && killed.elapsed() < limit {
        let mut still = Vec::new();
        for accessor in alive {
            let answer = http
                .post(format!("{address}/v1/auth/token/lookup-accessor"))
                .header("X-Vault-Token", ROOT_TOKEN)
                .json(&json!({ "accessor": accessor }))
                .send()
                .await;
            if answer.is_ok_and(|response| response.status().is_success()) {
                still.push(accessor);
            }
        }
        alive = still;
        if !alive.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    killed.elapsed()
}

/// Waits until no lease is pending, active or being revoked; returns how many still are.
async fn until_drained(store: &Store, limit: Duration) -> i64 {
    let started = Instant::now();
    loop {
        let mut open = 0;
        for state in [LeaseState::Pending, LeaseState::Active, LeaseState::Revoking] {
            open += store.count_leases(state).await.expect("store readable");
        }
        if open == 0 || started.elapsed() > limit {
            return open;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A number in `[low, high)`, from a v4 UUID's random bits.
fn random_between((low, high): (u64, u64)) -> u64 {
    let random = uuid::Uuid::new_v4().as_u128() as u64;
    low + random % (high - low).max(1)
}
