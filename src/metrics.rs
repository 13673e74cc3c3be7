//! Prometheus metrics: small hooks called where things happen, one recorder installed by
//! `serve`, rendered by `GET /metrics`. Without an installed recorder (library tests, CLI
//! commands) every hook is a no-op.
//!
//! Labels are bounded: results are error codes, roles are the policy's (anything else is
//! `undefined`), issuers and backends come from config, repositories only from the configured
//! allow-list (`other` otherwise). No job id, token or secret is ever a label.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use metrics::{SharedString, counter, gauge, histogram};
#[cfg(feature = "server")]
use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
#[cfg(feature = "server")]
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde::Deserialize;
use thiserror::Error;

#[cfg(feature = "server")]
const LATENCY_BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
#[cfg(feature = "server")]
/// Job end to backend confirmation: seconds normally, minutes during a backend outage.
const EXPOSURE_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];

/// `[metrics]` in the broker's config.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Repositories that get their own `repository` label value; every other is `other`.
    #[serde(default)]
    pub repositories: Vec<String>,
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot install the metrics recorder: {0}")]
    Install(String),
}

struct Installed {
    #[cfg(feature = "server")]
    handle: PrometheusHandle,
    /// Shared, so that a label is a reference count, not a copy.
    repositories: HashSet<Arc<str>>,
}

static INSTALLED: OnceLock<Installed> = OnceLock::new();

#[cfg(feature = "server")]
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Installs the process-wide recorder; once per process.
#[cfg(feature = "server")]
pub fn install(config: &MetricsConfig) -> Result<(), Error> {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full("ci_creds_revocation_exposure_seconds".into()), EXPOSURE_BUCKETS)
        .and_then(|builder| builder.set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS))
        .map_err(|e| Error::Install(e.to_string()))?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|e| Error::Install(e.to_string()))?;
    let repositories = config.repositories.iter().map(|repository| Arc::from(repository.as_str())).collect();
    INSTALLED.set(Installed { handle, repositories }).map_err(|_| Error::Install("installed twice".into()))?;
    describe();
    Ok(())
}

/// Histogram samples wait in the recorder until they are drained, by a scrape or by upkeep: a
/// broker nobody scrapes would otherwise grow by every sample it records.
#[cfg(feature = "server")]
pub async fn upkeep() {
    let mut ticker = tokio::time::interval(UPKEEP_INTERVAL);
    loop {
        ticker.tick().await;
        if let Some(installed) = INSTALLED.get() {
            installed.handle.run_upkeep();
        }
    }
}

#[cfg(feature = "server")]
fn describe() {
    describe_counter!(
        "ci_creds_exchanges_total",
        "Exchanges by result (granted or error code), requested role and repository; an exchange for n roles counts n times."
    );
    describe_histogram!(
        "ci_creds_exchange_duration_seconds",
        Unit::Seconds,
        "Exchange latency by outcome (granted, refused)."
    );
    describe_histogram!(
        "ci_creds_backend_request_duration_seconds",
        Unit::Seconds,
        "Backend call latency by backend and operation (mint, revoke)."
    );
    describe_counter!("ci_creds_backend_errors_total", "Failed backend calls by backend and operation.");
    describe_counter!(
        "ci_creds_revocations_total",
        "Revocation attempts by this process: done (backend confirmed) or retried (failed, scheduled again)."
    );
    describe_gauge!(
        "ci_creds_revocations_pending",
        "Leases waiting for their revocation to be confirmed (the durable queue)."
    );
    describe_histogram!(
        "ci_creds_revocation_exposure_seconds",
        Unit::Seconds,
        "From a job's end to the backend confirming a credential's revocation."
    );
    describe_gauge!("ci_creds_leases", "Leases in the store by state.");
    describe_gauge!("ci_creds_jobs", "Jobs in the store by state (active: seen by an exchange, not ended).");
    describe_counter!("ci_creds_jwks_fetches_total", "Issuer key fetches by issuer and result (ok, error).");
    describe_counter!(
        "ci_creds_webhook_deliveries_total",
        "Webhook deliveries by CI, endpoint (`[webhooks.<name>]`) and outcome (ended, ignored, duplicate or error code)."
    );
    describe_counter!("ci_creds_audit_write_failures_total", "Audit events that could not be written.");
    describe_counter!(
        "ci_creds_jobs_ended_total",
        "Jobs ended, by source: webhook, self (the job's own revoke), reconcile or exchange_check (the CI's API said it had finished)."
    );
    describe_counter!(
        "ci_creds_ci_api_calls_total",
        "Questions to a CI's API by issuer, during (exchange, reconcile) and answer (running, finished, unknown, error; skipped: not sent, the budget spent or the CI asking for a pause)."
    );
    describe_histogram!("ci_creds_ci_api_request_duration_seconds", Unit::Seconds, "CI API call latency by issuer.");
    describe_counter!(
        "ci_creds_exchanges_liveness_unknown_total",
        "Exchanges allowed (on_unavailable = allow) although the CI's API could not say whether the job still runs."
    );
    describe_gauge!("ci_creds_connections_open", "Client connections open now.");
    describe_counter!(
        "ci_creds_connections_closed_total",
        "Client connections the broker closed, by limit: header_timeout, idle_timeout, request_timeout, connection_cap (closed to make room)."
    );
    describe_counter!(
        "ci_creds_connections_refused_total",
        "New client connections refused at once: the connection cap was full of requests being answered, or no file descriptor was left."
    );
    describe_gauge!("ci_creds_requests_in_flight", "Requests holding an in-flight slot now.");
    describe_gauge!(
        "ci_creds_runner_hygiene",
        "The fleet report's figures over the last 30 days: single_use_share (0..1), multi_repository_runners, reused_single_use_runners, stale_persistent_runners; NaN without data."
    );
    describe_gauge!(
        "ci_creds_runner_hygiene_met",
        "1 when the figure meets its target (`runners report`), 0 when not, NaN without data."
    );
    describe_gauge!(
        "ci_creds_runner_jobs_30d",
        "Jobs judged in the last 30 days, by runner tier (`none`: in no tier)."
    );
    describe_counter!(
        "ci_creds_runner_records_dropped_total",
        "Judged jobs left out of the fleet report because their records queued faster than the store took them."
    );
    describe_counter!(
        "ci_creds_runner_reuse_total",
        "Exchanges refused `runner_reused`: a single-use tier's job on a runner that served another job, by issuer and tier."
    );
    describe_counter!(
        "ci_creds_runner_refusals_total",
        "Refused exchanges counted against the job's runner, by reason: replayed, job_ended, ci_unavailable, runner_reused, runner_unknown, exchange_cap, policy."
    );
    describe_gauge!(
        "ci_creds_github_app_token_expiry_timestamp_seconds",
        "When (unix seconds) the installation token the broker reads GitHub's jobs API with expires, by installation; taken anew 5 minutes before. Its remaining life is this minus time()."
    );
    describe_gauge!(
        "ci_creds_ci_api_credentials_expiry_timestamp_seconds",
        "When (unix seconds) the read credentials of the CI API the broker asks expire, by issuer, where the CI tells it; checked hourly. Its remaining life is this minus time()."
    );
    describe_counter!(
        "ci_creds_requests_overloaded_total",
        "Requests answered 503 `overloaded` because every in-flight slot was taken."
    );
    describe_gauge!(
        "ci_creds_vault_token_ttl_seconds",
        Unit::Seconds,
        "Seconds the broker's own Vault token has left; 0 once Vault refuses it, NaN for a token that never expires."
    );
    describe_gauge!(
        "ci_creds_vault_token_renewable",
        "1 when the broker's own Vault token can be renewed, 0 when it expires at ci_creds_vault_token_ttl_seconds unless the broker logs in again."
    );
}

/// The repository as a label value.
fn repository_label(repository: Option<&str>) -> SharedString {
    match (repository, INSTALLED.get()) {
        (None, _) => SharedString::const_str("unknown"),
        (Some(repository), Some(installed)) => match installed.repositories.get(repository) {
            Some(allowed) => SharedString::from(Arc::clone(allowed)),
            None => SharedString::const_str("other"),
        },
        (Some(_), None) => SharedString::const_str("other"),
    }
}

/// One exchange: `result` is `granted` or the error code answered; `roles` are already bounded.
pub fn exchange(result: &'static str, roles: &[String], repository: Option<&str>, elapsed: Duration) {
    let repository = repository_label(repository);
    for role in roles {
        counter!("ci_creds_exchanges_total", "result" => result, "role" => role.clone(), "repository" => repository.clone())
            .increment(1);
    }
    let outcome = if result == "granted" { "granted" } else { "refused" };
    histogram!("ci_creds_exchange_duration_seconds", "outcome" => outcome).record(elapsed.as_secs_f64());
}

/// `backend` is a configured backend's name: a `&'static str` costs no allocation per call.
pub fn backend_call(backend: impl Into<SharedString>, operation: &'static str, elapsed: Duration, ok: bool) {
    let backend = backend.into();
    histogram!("ci_creds_backend_request_duration_seconds", "backend" => backend.clone(), "operation" => operation)
        .record(elapsed.as_secs_f64());
    if !ok {
        counter!("ci_creds_backend_errors_total", "backend" => backend, "operation" => operation).increment(1);
    }
}

pub fn exposure_window(milliseconds: i64) {
    histogram!("ci_creds_revocation_exposure_seconds").record(milliseconds.max(0) as f64 / 1000.0);
}

pub fn jwks_fetch(issuer: &str, ok: bool) {
    let result = if ok { "ok" } else { "error" };
    counter!("ci_creds_jwks_fetches_total", "issuer" => issuer.to_owned(), "result" => result).increment(1);
}

/// `webhook` is a configured `[webhooks.<name>]` table's name (or a CI's own path), never a
/// path a caller made up.
pub fn webhook(ci: &'static str, webhook: impl Into<SharedString>, outcome: &'static str) {
    counter!("ci_creds_webhook_deliveries_total", "ci" => ci, "webhook" => webhook.into(), "outcome" => outcome)
        .increment(1);
}

pub fn connections_open(open: usize) {
    gauge!("ci_creds_connections_open").set(open as f64);
}

/// `limit` is a `CloseReason` label.
pub fn connection_closed(limit: &'static str) {
    counter!("ci_creds_connections_closed_total", "limit" => limit).increment(1);
}

pub fn connection_refused() {
    counter!("ci_creds_connections_refused_total").increment(1);
}

pub fn requests_in_flight(in_flight: usize) {
    gauge!("ci_creds_requests_in_flight").set(in_flight as f64);
}

pub fn overloaded() {
    counter!("ci_creds_requests_overloaded_total").increment(1);
}

/// `source`: webhook, self, reconcile or exchange_check.
pub fn job_ended(source: &'static str) {
    counter!("ci_creds_jobs_ended_total", "source" => source).increment(1);
}

/// One question to a CI's API, `during` exchange or reconcile: `answer` running, finished or
/// unknown (a status that settles neither), error (no readable answer), or skipped (not sent:
/// the budget was spent or the CI asked for a pause). Only calls sent are timed.
pub fn ci_api_call(issuer: &str, during: &'static str, answer: &'static str, elapsed: Duration) {
    counter!("ci_creds_ci_api_calls_total", "issuer" => issuer.to_owned(), "during" => during, "answer" => answer)
        .increment(1);
    if answer != "skipped" {
        histogram!("ci_creds_ci_api_request_duration_seconds", "issuer" => issuer.to_owned())
            .record(elapsed.as_secs_f64());
    }
}

/// The installation token for `installation` that the broker reads GitHub's API with, good until
/// `expires_at` (unix seconds). An expiry, not a remaining life: it stays true between scrapes
/// without a task to count it down.
pub fn github_app_token_expiry(installation: u64, expires_at: i64) {
    gauge!("ci_creds_github_app_token_expiry_timestamp_seconds", "installation" => installation.to_string())
        .set(expires_at as f64);
}

/// The read credentials of the CI API of `issuer` (a configured name) expire at `expires_at`
/// (unix seconds), as the CI told it.
pub fn ci_api_credentials_expiry(issuer: &str, expires_at: i64) {
    gauge!("ci_creds_ci_api_credentials_expiry_timestamp_seconds", "issuer" => issuer.to_owned())
        .set(expires_at as f64);
}

/// A single-use tier's job refused because its runner served another job; `tier` is a policy name.
pub fn runner_reused(issuer: &str, tier: &str) {
    counter!("ci_creds_runner_reuse_total", "issuer" => issuer.to_owned(), "tier" => tier.to_owned()).increment(1);
}

/// A judged job left out of the fleet report: its records queued faster than the store took them.
pub fn runner_jobs_dropped() {
    counter!("ci_creds_runner_records_dropped_total").increment(1);
}

/// An exchange allowed although the CI's API could not say whether the job runs.
pub fn liveness_unknown(issuer: &str) {
    counter!("ci_creds_exchanges_liveness_unknown_total", "issuer" => issuer.to_owned()).increment(1);
}

pub fn audit_write_failed() {
    counter!("ci_creds_audit_write_failures_total").increment(1);
}

/// The revocation worker's attempts since start: `done` (backend confirmed), `retried`.
pub fn revocations(done: u64, retried: u64) {
    counter!("ci_creds_revocations_total", "result" => "done").absolute(done);
    counter!("ci_creds_revocations_total", "result" => "retried").absolute(retried);
}

/// Leases in the store in `state`; those revoking are also the revocation queue's length.
pub fn leases(state: &'static str, count: i64, revoking: bool) {
    gauge!("ci_creds_leases", "state" => state).set(count as f64);
    if revoking {
        gauge!("ci_creds_revocations_pending").set(count as f64);
    }
}

/// Jobs in the store in `state`.
pub fn jobs(state: &'static str, count: i64) {
    gauge!("ci_creds_jobs", "state" => state).set(count as f64);
}

/// One of the fleet report's figures, `name` from its fixed set: its value and whether it meets
/// its target, each NaN when there is no data.
pub fn runner_hygiene(name: String, value: Option<f64>, met: Option<bool>) {
    gauge!("ci_creds_runner_hygiene", "figure" => name.clone()).set(value.unwrap_or(f64::NAN));
    let met = met.map_or(f64::NAN, |met| if met { 1.0 } else { 0.0 });
    gauge!("ci_creds_runner_hygiene_met", "figure" => name).set(met);
}

/// A refused exchange counted against its runner, by reason (never by runner: the label set
/// stays bounded).
pub fn runner_refusal(reason: &'static str) {
    counter!("ci_creds_runner_refusals_total", "reason" => reason).increment(1);
}

/// Jobs judged in the last 30 days in `tier` (a policy name, or `none`).
pub fn runner_jobs_30d(tier: String, jobs: usize) {
    gauge!("ci_creds_runner_jobs_30d", "tier" => tier).set(jobs as f64);
}

/// The broker's own Vault token: seconds it has left (`None`: it never expires) and whether it
/// can be renewed.
pub fn vault_token(ttl_seconds: Option<f64>, renewable: bool) {
    gauge!("ci_creds_vault_token_ttl_seconds").set(ttl_seconds.unwrap_or(f64::NAN));
    gauge!("ci_creds_vault_token_renewable").set(if renewable { 1.0 } else { 0.0 });
}

/// Whether a recorder is installed: without one, a scrape has nothing to show.
pub fn installed() -> bool {
    INSTALLED.get().is_some()
}

/// The Prometheus text of everything recorded; `None` when no recorder is installed.
#[cfg(feature = "server")]
pub fn render() -> Option<String> {
    INSTALLED.get().map(|installed| installed.handle.render())
}
