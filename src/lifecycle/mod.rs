//! The job and lease lifecycle: exchanging a verified job token for credentials, ending jobs
//! (webhooks, self-revoke), the durable revocation queue and the expiry sweeper. The API calls
//! two services, [`Exchange`] and [`JobEnds`], through narrow methods; the [`Broker`] holds them
//! and what the background tasks share.

#[cfg(feature = "server")]
mod broker;
#[cfg(feature = "server")]
mod ci_calls;
#[cfg(feature = "server")]
pub mod ci_credentials;
#[cfg(feature = "server")]
mod confirm;
#[cfg(feature = "server")]
mod exchange;
#[cfg(feature = "server")]
mod jobs;
#[cfg(feature = "server")]
mod judgement;
#[cfg(feature = "server")]
mod liveness;
#[cfg(feature = "server")]
pub mod reconciler;
mod request;
#[cfg(feature = "server")]
pub mod revocation;
#[cfg(feature = "server")]
mod runners;
#[cfg(feature = "server")]
pub mod sweeper;
#[cfg(feature = "server")]
mod unrecorded;
pub mod webhooks;

#[cfg(feature = "server")]
pub use broker::Parts;
#[cfg(feature = "server")]
pub use exchange::{Attempt, Exchanged, IssuedCredential};
#[cfg(feature = "server")]
pub use jobs::{EndedBy, JobEnd};
pub use request::{ExchangeRequest, MAX_ROLE_NAME_CHARS, MAX_ROLES_PER_EXCHANGE, check_request};
#[cfg(feature = "server")]
pub use revocation::{RevocationQueue, RevocationStats};
#[cfg(feature = "server")]
pub use unrecorded::PENDING_GIVE_UP_SECONDS;

#[cfg(feature = "server")]
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;

use crate::policy::RoleDenial;
#[cfg(feature = "server")]
use crate::{audit::Audit, backends::Backends, ci_api::CiApis, identity::Verifier, policy::PolicySet, store::Store};
use crate::{backends, identity, store};

#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    InvalidRequest(String),
    #[error(transparent)]
    Identity(#[from] identity::Error),
    #[error("the policy does not allow every requested role")]
    Denied(Vec<RoleDenial>),
    #[error("this token was already exchanged; request a fresh token from the CI system")]
    Replayed,
    #[error("this job has ended; it can obtain no more credentials")]
    JobEnded,
    /// The job has had the role in as many exchanges as its `max_exchanges_per_job` allows.
    #[error(
        "this job has had role `{role}` {max} times, as many as its policy allows one job (`max_exchanges_per_job`)"
    )]
    ExchangeCapReached { role: String, max: u32 },
    /// `on_unavailable = "refuse"` and the CI's API could not say whether the job still runs.
    #[error("the CI's API cannot confirm that this job is still running; retry later")]
    CiUnavailable,
    /// A single-use tier's job on a runner that served another job.
    #[error("runner {runner} already served another job, and runner tier `{tier}` is single-use")]
    RunnerReused { runner: String, tier: String },
    /// A single-use tier's job whose runner cannot be told from others.
    #[error("runner tier `{tier}` is single-use, and this job's {fact} is unknown: {why}")]
    RunnerUnknown { tier: String, fact: &'static str, why: String },
    /// A role bound to the job's address, asked where the address is not known: minting it
    /// unbound would drop the binding silently.
    #[error("role `{role}` binds its credentials to the job's address, and this exchange's address is not known")]
    AddressUnknown { role: String },
    #[error("the webhook's signature or token is missing or wrong")]
    InvalidSignature,
    #[error("no webhook is configured at this path")]
    WebhookNotConfigured,
    #[error(transparent)]
    Backend(#[from] backends::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// How long records outlive what they describe, and how often the sweeper runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifecycleConfig {
    /// Ended jobs, finished leases and webhook deliveries are kept this long, so a job's end is
    /// remembered past any token it could still present.
    #[serde(default = "default_retention", deserialize_with = "crate::duration::human")]
    pub retention: Duration,
    #[serde(default = "default_sweep_interval", deserialize_with = "crate::duration::human")]
    pub sweep_interval: Duration,
    /// How long a worker holds a claimed revocation task; a replica that dies holding one delays
    /// it by at most this much before another replica takes it over.
    #[serde(default = "default_claim_timeout", deserialize_with = "crate::duration::human")]
    pub claim_timeout: Duration,
    /// How often the reconciler asks the CI's API about jobs whose end has not arrived.
    #[serde(default = "default_reconcile", deserialize_with = "crate::duration::human")]
    pub reconcile_interval: Duration,
    /// A job is asked about again only this long after it was last asked.
    #[serde(default = "default_reconcile", deserialize_with = "crate::duration::human")]
    pub reconcile_after: Duration,
    /// Runner records (single use, the fleet report) are kept this long past a runner's last job.
    #[serde(default = "default_runner_retention", deserialize_with = "crate::duration::human")]
    pub runner_retention: Duration,
    /// How often the fleet report's figures on `/metrics` are recomputed, in the background.
    #[serde(default = "default_fleet_refresh", deserialize_with = "crate::duration::human")]
    pub fleet_refresh_interval: Duration,
    /// How often each CI API's read credentials are asked for their expiry
    /// (`ci_credentials.rs`).
    #[serde(default = "default_ci_credentials", deserialize_with = "crate::duration::human")]
    pub ci_credentials_interval: Duration,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        Self {
            retention: default_retention(),
            sweep_interval: default_sweep_interval(),
            claim_timeout: default_claim_timeout(),
            reconcile_interval: default_reconcile(),
            reconcile_after: default_reconcile(),
            runner_retention: default_runner_retention(),
            fleet_refresh_interval: default_fleet_refresh(),
            ci_credentials_interval: default_ci_credentials(),
        }
    }
}

fn default_ci_credentials() -> Duration {
    Duration::from_secs(3600)
}

fn default_retention() -> Duration {
    Duration::from_secs(24 * 3600)
}

fn default_runner_retention() -> Duration {
    Duration::from_secs(90 * 24 * 3600)
}

fn default_claim_timeout() -> Duration {
    Duration::from_secs(60)
}

fn default_reconcile() -> Duration {
    Duration::from_secs(60)
}

fn default_fleet_refresh() -> Duration {
    Duration::from_secs(60)
}

fn default_sweep_interval() -> Duration {
    Duration::from_secs(60)
}

/// The lifecycle as the rest of the broker sees it: the two services the API calls, and the
/// background tasks (`revocation`, `sweeper`, `reconciler` …) that read what they need here.
/// Built from its [`Parts`] (`broker.rs`); nothing outside `lifecycle/` reads its fields.
#[cfg(feature = "server")]
pub struct Broker {
    exchange: Arc<Exchange>,
    job_ends: Arc<JobEnds>,
    policy: Arc<PolicySet>,
    store: Store,
    backends: Arc<Backends>,
    revocations: Arc<RevocationQueue>,
    lifecycle: LifecycleConfig,
    ci_apis: Arc<CiApis>,
    audit: Arc<Audit>,
}

/// Exchanging a job's token for credentials (`exchange.rs`): the judgement of runner facts,
/// liveness and policy (`judgement.rs`), single use (`runners.rs`), leases and minting, and
/// the settling of leases a broker left pending (`unrecorded.rs`).
#[cfg(feature = "server")]
pub struct Exchange {
    verifier: Arc<Verifier>,
    policy: Arc<PolicySet>,
    store: Store,
    backends: Arc<Backends>,
    ci_apis: Arc<CiApis>,
    /// Jobs the CI's API said were running moments ago, by (issuer, job id): a job often
    /// exchanges several tokens at once, and one answer serves them all.
    running: RunningCache,
    runner_jobs: crate::fleet::RunnerJobs,
    audit: Arc<Audit>,
    revocations: Arc<RevocationQueue>,
    lifecycle: LifecycleConfig,
    /// A job the CI's API reports finished at an exchange is ended as a webhook would end it.
    job_ends: Arc<JobEnds>,
}

/// Ending jobs (`jobs.rs`): by a CI's webhook (`webhooks/`), by the job itself, or as the
/// CI's API reports; each end durable before its credentials are queued for revocation.
#[cfg(feature = "server")]
pub struct JobEnds {
    verifier: Arc<Verifier>,
    store: Store,
    webhooks: webhooks::Webhooks,
    revocations: Arc<RevocationQueue>,
    /// The exchange's cache of running jobs, which forgets a job as it ends.
    running: RunningCache,
    audit: Arc<Audit>,
    lifecycle: LifecycleConfig,
}

/// Jobs found running, with the runner the answer named.
#[cfg(feature = "server")]
type RunningCache = moka::future::Cache<(String, String), Option<std::sync::Arc<crate::ci::RunnerFacts>>>;

/// How long a "running" answer is reused for the same job's exchanges.
#[cfg(feature = "server")]
pub const RUNNING_ANSWER_REUSE: Duration = Duration::from_secs(5);

#[cfg(feature = "server")]
fn running_cache() -> RunningCache {
    moka::future::Cache::builder().max_capacity(100_000).time_to_live(RUNNING_ANSWER_REUSE).build()
}

impl From<crate::ci::WebhookError> for Error {
    fn from(error: crate::ci::WebhookError) -> Self {
        match error {
            crate::ci::WebhookError::InvalidSignature => Self::InvalidSignature,
            crate::ci::WebhookError::InvalidRequest(reason) => Self::InvalidRequest(reason),
        }
    }
}
