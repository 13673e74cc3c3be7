//! Building the broker from its parts, handing its two services to the API, and the few
//! broker-wide reads the API makes: whether it is ready, and the counts a scrape records.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Broker, Exchange, JobEnds, LifecycleConfig, RevocationQueue, running_cache, webhooks};
use crate::audit::Audit;
use crate::backends::Backends;
use crate::ci_api::CiApis;
use crate::fleet::RunnerJobs;
use crate::identity::Verifier;
use crate::metrics;
use crate::policy::PolicySet;
use crate::store::{JobState, LeaseState, Store};

/// What a broker is built from (`server.rs`, or a test's broker in its own process): each part
/// once, shared by the services and the background tasks that need it.
pub struct Parts {
    pub verifier: Verifier,
    pub policy: PolicySet,
    pub store: Store,
    pub backends: Backends,
    pub webhooks: webhooks::Webhooks,
    pub lifecycle: LifecycleConfig,
    pub audit: Audit,
    pub ci_apis: CiApis,
}

/// Job states counted for `/metrics`.
const JOB_STATES: [JobState; 2] = [JobState::Active, JobState::Ended];

impl Broker {
    /// Shares the parts between the services; starts the task that records judged jobs for the
    /// fleet report, so it is called within the runtime.
    pub fn new(parts: Parts) -> Self {
        let Parts { verifier, policy, store, backends, webhooks, lifecycle, audit, ci_apis } = parts;
        let (verifier, policy, backends, audit, ci_apis) =
            (Arc::new(verifier), Arc::new(policy), Arc::new(backends), Arc::new(audit), Arc::new(ci_apis));
        let revocations = Arc::new(RevocationQueue::default());
        let running = running_cache();
        let job_ends = Arc::new(JobEnds {
            verifier: verifier.clone(),
            store: store.clone(),
            webhooks,
            revocations: revocations.clone(),
            running: running.clone(),
            audit: audit.clone(),
            lifecycle: lifecycle.clone(),
        });
        let exchange = Arc::new(Exchange {
            verifier,
            policy: policy.clone(),
            store: store.clone(),
            backends: backends.clone(),
            ci_apis: ci_apis.clone(),
            running,
            runner_jobs: RunnerJobs::start(store.clone(), lifecycle.runner_retention),
            audit: audit.clone(),
            revocations: revocations.clone(),
            lifecycle: lifecycle.clone(),
            job_ends: job_ends.clone(),
        });
        Self { exchange, job_ends, policy, store, backends, revocations, lifecycle, ci_apis, audit }
    }

    /// The service that exchanges job tokens for credentials.
    pub fn exchange(&self) -> Arc<Exchange> {
        self.exchange.clone()
    }

    /// The service that ends jobs: webhooks and the job's own request.
    pub fn job_ends(&self) -> Arc<JobEnds> {
        self.job_ends.clone()
    }

    /// Whether the store and every configured backend answer; if not, which did not, and why.
    pub async fn ready(&self) -> Result<(), String> {
        self.store.ping().await.map_err(|e| format!("store: {e}"))?;
        self.backends.check().await.map_err(|e| e.to_string())
    }

    /// Records for `/metrics` what is counted rather than recorded as it happens: the
    /// revocation worker's attempts, and leases and jobs by state in the store now.
    pub async fn record_counts(&self) {
        let stats = &self.revocations.stats;
        metrics::revocations(stats.done.load(Ordering::Relaxed), stats.retried.load(Ordering::Relaxed));
        for state in LeaseState::ALL {
            match self.store.count_leases(state).await {
                Ok(count) => metrics::leases(state.as_str(), count, state == LeaseState::Revoking),
                Err(error) => tracing::warn!(%error, "metrics: cannot count leases"),
            }
        }
        for state in JOB_STATES {
            match self.store.count_jobs(state).await {
                Ok(count) => metrics::jobs(state.as_str(), count),
                Err(error) => tracing::warn!(%error, "metrics: cannot count jobs"),
            }
        }
    }
}
