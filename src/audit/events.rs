//! What an audit event says. Only non-secret values: a presented token appears as its SHA-256,
//! a credential as its revoke handle (e.g. a Vault accessor).

use std::net::IpAddr;

use serde::Serialize;

use crate::backends::RevokeHandle;
use crate::ci::Job;
use crate::policy::RoleDenial;

/// Who a job is, as far as its verified token says.
#[derive(Serialize)]
pub struct JobIdentity<'a> {
    pub issuer: &'a str,
    pub job_id: &'a str,
    pub repository: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository_id: Option<&'a str>,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_ref: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<&'a str>,
    /// The token's claim, else what the CI's API told (an Azure Pipelines pool): the value policy
    /// judged (`Job::effective_runner_environment`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner_environment: Option<&'a str>,
    /// The fork a change request comes from (Jenkins' `SCMHeadOrigin$Fork`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<&'a str>,
}

impl<'a> From<&'a Job> for JobIdentity<'a> {
    fn from(job: &'a Job) -> Self {
        Self {
            issuer: &job.issuer,
            job_id: &job.job_id,
            repository: &job.repository,
            repository_id: job.repository_id.as_deref(),
            git_ref: job.git_ref.as_deref(),
            event: job.event.as_deref(),
            environment: job.environment.as_deref(),
            workflow_ref: job.workflow_ref.as_deref(),
            run_id: job.run_id.as_deref(),
            runner_environment: job.effective_runner_environment().map(|environment| environment.value),
            fork: job.fork.as_deref(),
        }
    }
}

/// A job by its key, where only the key is at hand (webhooks, the revocation queue).
#[derive(Serialize)]
pub struct JobRef<'a> {
    pub issuer: &'a str,
    pub job_id: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "event")]
pub enum Event<'a> {
    #[serde(rename = "exchange.granted")]
    ExchangeGranted {
        token_sha256: &'a str,
        job: JobIdentity<'a>,
        roles: Vec<&'a str>,
        /// What the CI's API said of the job at the exchange: `running`, or `unknown` when it
        /// could not say and `on_unavailable = "allow"`. Absent when it was not asked.
        #[serde(skip_serializing_if = "Option::is_none")]
        ci_liveness: Option<&'a str>,
        /// Where the exchange came from: the TCP peer, or what a trusted proxy forwarded.
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<IpAddr>,
    },
    /// Any exchange that handed nothing out. `job` is absent when the token did not verify.
    #[serde(rename = "exchange.refused")]
    ExchangeRefused {
        token_sha256: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<JobIdentity<'a>>,
        roles: &'a [String],
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        denied: Option<&'a [RoleDenial]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<IpAddr>,
    },
    /// A single-use tier's runner seen serving a second job: that job is refused, and no job
    /// on the runner gets a single-use tier's credentials while its record lasts.
    #[serde(rename = "runner.reused")]
    RunnerReused { job: JobIdentity<'a>, runner_key: &'a str, first_job_id: &'a str, tier: &'a str },
    #[serde(rename = "credential.minted")]
    CredentialMinted {
        token_sha256: &'a str,
        job: JobIdentity<'a>,
        role: &'a str,
        lease_id: &'a str,
        backend: &'a str,
        #[serde(serialize_with = "crate::backends::serialize_public_handle")]
        handle: &'a RevokeHandle,
        /// Unix seconds.
        expires_at: i64,
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<IpAddr>,
        /// The address block the credential works only from (`bind_to_address`), as `a.b.c.d/n`.
        #[serde(skip_serializing_if = "Option::is_none")]
        bound_to: Option<ipnet::IpNet>,
    },
    #[serde(rename = "job.ended")]
    JobEnded {
        job: JobRef<'a>,
        /// `webhook:<ci>`, `self`, `ci_api:reconcile` or `ci_api:exchange`.
        ended_by: &'a str,
        /// `webhook`, `self`, `reconcile` or `exchange_check`.
        source: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        delivery_id: Option<&'a str>,
        /// The token the job ended itself with; webhooks present none.
        #[serde(skip_serializing_if = "Option::is_none")]
        token_sha256: Option<&'a str>,
        revoking: u64,
    },
    /// A webhook delivery that was not authenticated: nothing in it was read.
    #[serde(rename = "webhook.refused")]
    WebhookRefused {
        /// The CI whose endpoint it was sent to.
        ci: &'a str,
        /// That endpoint's name, `/v1/webhooks/<name>`.
        webhook: &'a str,
        /// `invalid_signature`.
        reason: &'a str,
    },
    /// An authenticated delivery the broker did not act on: another event or state, or one it
    /// cannot use (it is acknowledged all the same, so the CI keeps sending).
    #[serde(rename = "webhook.ignored")]
    WebhookIgnored {
        /// The CI whose endpoint it was sent to.
        ci: &'a str,
        /// That endpoint's name, `/v1/webhooks/<name>`.
        webhook: &'a str,
        reason: &'a str,
    },
    #[serde(rename = "revocation.confirmed")]
    RevocationConfirmed {
        job: JobRef<'a>,
        role: &'a str,
        lease_id: &'a str,
        backend: &'a str,
        #[serde(serialize_with = "crate::backends::serialize_public_handle")]
        handle: &'a RevokeHandle,
        attempts: i64,
        /// From the job's end to the backend's confirmation.
        #[serde(skip_serializing_if = "Option::is_none")]
        exposure_ms: Option<i64>,
    },
    #[serde(rename = "revocation.failed")]
    RevocationFailed {
        job: JobRef<'a>,
        role: &'a str,
        lease_id: &'a str,
        backend: &'a str,
        #[serde(serialize_with = "crate::backends::serialize_public_handle")]
        handle: &'a RevokeHandle,
        attempts: i64,
        retry_in_ms: i64,
        error: &'a str,
    },
}

impl Event<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Self::ExchangeGranted { .. } => "exchange.granted",
            Self::ExchangeRefused { .. } => "exchange.refused",
            Self::RunnerReused { .. } => "runner.reused",
            Self::CredentialMinted { .. } => "credential.minted",
            Self::JobEnded { .. } => "job.ended",
            Self::WebhookRefused { .. } => "webhook.refused",
            Self::WebhookIgnored { .. } => "webhook.ignored",
            Self::RevocationConfirmed { .. } => "revocation.confirmed",
            Self::RevocationFailed { .. } => "revocation.failed",
        }
    }
}
