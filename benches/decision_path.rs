//! The decision path in-process, backend left out: what the broker's own work adds to verifying a
//! token's signature. Four stages on the same GitHub-shaped token, one criterion group:
//!
//! 1. `verify_alone`: jsonwebtoken's RS256 signature and standard claim checks, the floor;
//! 2. `verify_and_map`: `Verifier::verify`: issuer pinning, key cache, validation, strict claim
//!    decoding and mapping to `Job`;
//! 3. `verify_map_policy`: + `PolicySet::decide` over 200 roles and 1,000 rules;
//! 4. `verify_map_policy_store`: + the replay record and one pending lease per granted role in
//!    SQLite, in one write, as the exchange writes them before it asks a backend.
//!
//! Two groups: `decision_path` runs one request at a time (the latency of each stage);
//! `decision_path_32_in_flight` keeps 32 requests in flight on two worker threads, as a server
//! does (its throughput, where concurrent exchanges' store writes commit together).
//!
//! Then a table per group of each stage's throughput as a share of `verify_alone`'s (the goal:
//! the full path at >= 50 %). Run: `cargo bench --bench decision_path` (a quick look: append
//! `-- --warm-up-time 1 --measurement-time 2`).

#[path = "decision_path/in_flight.rs"]
mod in_flight;
#[path = "decision_path/policy.rs"]
mod policy;
#[path = "decision_path/report.rs"]
mod report;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use ci_creds::ci::CiKind;
use ci_creds::ci::Job;
use ci_creds::dev::{DevIssuer, SigningKey, live_claims};
use ci_creds::identity::{IssuerConfig, Verifier};
use ci_creds::lifecycle::LifecycleConfig;
use ci_creds::net::HttpClient;
use ci_creds::policy::{Decision, PolicyFile, PolicySet, Role};
use ci_creds::store::{LeaseBegun, NewLease, NewLeases, SpentToken, Store};
use criterion::Criterion;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use tokio::runtime::Runtime;

const GROUP: &str = "decision_path";
const GROUP_IN_FLIGHT: &str = "decision_path_32_in_flight";
const STAGES: [&str; 4] = ["verify_alone", "verify_and_map", "verify_map_policy", "verify_map_policy_store"];
const AUDIENCE: &str = "https://ci-creds.example";
/// Longer than any run of this bench, so the token cannot expire mid-measurement.
const TOKEN_LIFETIME_SECONDS: i64 = 3600;
/// The verifier's clock skew allowance, so the floor validates exactly what the verifier does.
const LEEWAY_SECONDS: u64 = 60;

/// Everything the stages share, built once before any measurement.
struct Fixture {
    /// One thread, as one request's work runs on one.
    runtime: Runtime,
    /// Two worker threads, as on the machine the load benchmark runs on.
    in_flight_runtime: Runtime,
    stages: Arc<Stages>,
    /// Each runtime's own store: a store's committing task runs on the runtime that opened it.
    store: Store,
    in_flight_store: Store,
    /// Kept so the issuer keeps serving and the database files outlive the measurements.
    _issuer: Arc<DevIssuer>,
    _store_dir: tempfile::TempDir,
}

/// What every stage reads, shared by the in-flight group's tasks.
struct Stages {
    token: String,
    floor_key: DecodingKey,
    floor_validation: Validation,
    verifier: Verifier,
    policy: PolicySet,
    requested: Vec<String>,
    /// Every exchange measured gets a token id and job id never written before.
    exchanges: AtomicU64,
}

fn main() {
    // Test runners (`cargo nextest list/run --all-targets`) ask every target for its tests with
    // `--list`; this bench has none, and generating a key and starting an issuer to say so is waste.
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let started = SystemTime::now();
    let mut criterion = Criterion::default().configure_from_args();
    let fixture = Fixture::new();
    bench_decision_path(&mut criterion, &fixture);
    criterion.final_summary();
    let stats = fixture.in_flight_store.group_commit_stats();
    if stats.batches > 0 {
        println!(
            "\n{GROUP_IN_FLIGHT}: {} writes committed in {} shared transactions ({:.1} per transaction), {} failed",
            stats.batched_writes,
            stats.batches,
            stats.batched_writes as f64 / stats.batches as f64,
            stats.batches_failed
        );
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` runs each stage once, with no timings.
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|arg| arg == "--bench") && !args.iter().any(|arg| arg == "--test" || arg == "--profile-time") {
        report::print_ratios(GROUP, &STAGES, started);
        report::print_ratios(GROUP_IN_FLIGHT, &STAGES, started);
    }
}

fn bench_decision_path(criterion: &mut Criterion, f: &Fixture) {
    let s = &f.stages;
    let mut group = criterion.benchmark_group(GROUP);
    group.bench_function(STAGES[0], |b| b.iter(|| s.verify_alone()));
    group.bench_function(STAGES[1], |b| b.to_async(&f.runtime).iter(|| s.verify_and_map()));
    group.bench_function(STAGES[2], |b| b.to_async(&f.runtime).iter(|| s.verify_map_policy()));
    group.bench_function(STAGES[3], |b| b.to_async(&f.runtime).iter(|| s.verify_map_policy_store(&f.store)));
    group.finish();

    let mut group = criterion.benchmark_group(GROUP_IN_FLIGHT);
    let runtime = &f.in_flight_runtime;
    let shared = || f.stages.clone();
    group.bench_function(STAGES[0], |b| {
        b.iter_custom(|iters| {
            let s = shared();
            runtime.block_on(in_flight::run(iters, move || {
                let s = s.clone();
                async move { s.verify_alone() }
            }))
        })
    });
    group.bench_function(STAGES[1], |b| {
        b.iter_custom(|iters| {
            let s = shared();
            runtime.block_on(in_flight::run(iters, move || {
                let s = s.clone();
                async move { s.verify_and_map().await }
            }))
        })
    });
    group.bench_function(STAGES[2], |b| {
        b.iter_custom(|iters| {
            let s = shared();
            runtime.block_on(in_flight::run(iters, move || {
                let s = s.clone();
                async move { s.verify_map_policy().await }
            }))
        })
    });
    group.bench_function(STAGES[3], |b| {
        b.iter_custom(|iters| {
            let (s, store) = (shared(), f.in_flight_store.clone());
            runtime.block_on(in_flight::run(iters, move || {
                let (s, store) = (s.clone(), store.clone());
                async move { s.verify_map_policy_store(&store).await }
            }))
        })
    });
    group.finish();
}

impl Stages {
    fn verify_alone(&self) {
        jsonwebtoken::decode::<Value>(black_box(&self.token), &self.floor_key, &self.floor_validation).expect("valid");
    }

    async fn verify_and_map(&self) {
        self.verifier.verify(black_box(&self.token)).await.expect("valid");
    }

    async fn verify_map_policy(&self) {
        let job = self.verifier.verify(black_box(&self.token)).await.expect("valid");
        assert!(matches!(self.policy.decide(&job, &self.requested), Decision::Granted(_)));
    }

    /// Every exchange verifies the same token: verifying costs the same whatever `jti` a token
    /// carries, criterion picks the iteration count (so a pre-signed pool could run dry), and
    /// signing per exchange would make a run take minutes. The verified job then gets a fresh
    /// token id and job id, so the replay record and the job's row are inserted, as in every
    /// real exchange, instead of the exchange being refused as a replay. The token id is random,
    /// as CI systems' `jti`s are (a UUID), so each replay record lands on a page of its own as
    /// the table grows; job ids increase, as CI systems' do.
    async fn verify_map_policy_store(&self, store: &Store) {
        let mut job = self.verifier.verify(black_box(&self.token)).await.expect("valid");
        let Decision::Granted(roles) = self.policy.decide(&job, &self.requested) else {
            panic!("the bench's request was refused");
        };
        let exchange_number = self.exchanges.fetch_add(1, Ordering::Relaxed);
        job.token_id = format!("jti:{}", uuid::Uuid::new_v4());
        job.job_id = format!("bench-{exchange_number}");
        record_before_minting(store, &job, &roles).await;
    }
}

/// What `lifecycle/exchange.rs` writes before any backend is asked, in one transaction: the
/// token spent and one pending lease per granted role (refused if the job has ended or the token
/// was exchanged before).
async fn record_before_minting(store: &Store, job: &Job, roles: &[&Role]) {
    let retention = LifecycleConfig::default().retention.as_secs() as i64;
    let expires_at = |role: &Role| ci_creds::clock::now() + role.max_ttl.as_secs() as i64;
    let last_expiry = roles.iter().map(|role| expires_at(role)).max().unwrap_or_default();
    let leases = NewLeases {
        issuer: job.issuer.clone(),
        job_id: job.job_id.clone(),
        repository: job.repository.clone(),
        job_keep_until: last_expiry.max(job.expires_at) + retention,
        spends: Some(SpentToken { token_id: job.token_id.clone(), legacy_id: None, expires_at: job.expires_at }),
        leases: roles
            .iter()
            .map(|role| NewLease {
                id: uuid::Uuid::now_v7().to_string(),
                role: role.name.clone(),
                backend: role.backend.as_str().to_owned(),
                expires_at: expires_at(role),
                max_per_job: role.max_exchanges_per_job,
                bound_to: None,
            })
            .collect(),
        ci: Default::default(),
        address: Some("127.0.0.1".into()),
    };
    assert_eq!(store.begin_leases(leases).await.expect("store"), LeaseBegun::Begun);
}

impl Fixture {
    fn new() -> Self {
        // One thread, as a request's work runs on one: the issuer's HTTP server only has to answer
        // the warm-up fetch, which happens inside `block_on` below.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let key = SigningKey::generate_rs256().expect("RSA key");
        let floor_key = DecodingKey::from_jwk(&serde_json::from_value::<Jwk>(key.jwk().clone()).expect("JWK"))
            .expect("decoding key");
        let issuer = runtime.block_on(DevIssuer::start("127.0.0.1:0".parse().expect("address"), key)).expect("issuer");
        let claims = live_claims(&github_fixture(), issuer.url(), AUDIENCE, TOKEN_LIFETIME_SECONDS);
        let token = issuer.sign(&claims).expect("signs");

        let mut floor_validation = Validation::new(Algorithm::RS256);
        floor_validation.set_issuer(&[issuer.url()]);
        floor_validation.set_audience(&[AUDIENCE]);
        floor_validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        floor_validation.validate_nbf = true;
        floor_validation.leeway = LEEWAY_SECONDS;

        let github = IssuerConfig {
            name: "github".into(),
            kind: CiKind::Github,
            issuer: issuer.url().to_owned(),
            jwks_url: None,
            algorithms: vec![Algorithm::RS256],
            max_token_lifetime: None,
            audience: None,
            claim_names: Default::default(),
            controller_url: None,
        };
        let verifier = Verifier::new(AUDIENCE.into(), vec![github], HttpClient::new().expect("HTTP client"));
        let policy = policy_set();
        let requested = policy::requested_roles();
        let store_dir = tempfile::tempdir().expect("temp dir");
        let store_url = |name: &str| format!("sqlite://{}", store_dir.path().join(name).display());
        let store = runtime.block_on(Store::connect(&store_url("one-at-a-time.db"))).expect("store");
        let in_flight_runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let in_flight_store = in_flight_runtime.block_on(Store::connect(&store_url("in-flight.db"))).expect("store");

        // Warm the key cache (discovery and JWKS are fetched once, here), and make sure the
        // policy stages measure a grant, not a cheaper refusal.
        let job = runtime.block_on(verifier.verify(&token)).expect("the token verifies");
        if let Decision::Denied(denials) = policy.decide(&job, &requested) {
            panic!("the bench's request must be granted; refused: {denials:?}");
        }
        let stages =
            Stages { token, floor_key, floor_validation, verifier, policy, requested, exchanges: AtomicU64::new(0) };
        Self {
            runtime,
            in_flight_runtime,
            stages: Arc::new(stages),
            store,
            in_flight_store,
            _issuer: issuer,
            _store_dir: store_dir,
        }
    }
}

fn policy_set() -> PolicySet {
    let text = policy::yaml();
    let set = PolicySet::parse(&[PolicyFile { path: "bench.yaml", text: &text }]).expect("the generated policy parses");
    let roles = set.roles().count();
    let rules: usize = set.roles().map(|role| role.allow.len() + role.deny.len()).sum();
    let kinds = policy::ROLE_KINDS.len();
    assert_eq!(roles, policy::REPOSITORIES * kinds);
    assert_eq!(rules, roles * (policy::ALLOW_RULES_PER_ROLE + policy::DENY_RULES_PER_ROLE));
    set
}

/// GitHub's documented token claims, as the integration tests read them from `tests/fixtures/`.
fn github_fixture() -> Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let path = dir.join("github-token-claims.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    serde_json::from_str(&text).expect("the fixture is JSON")
}
