//! `GET /metrics`: Prometheus text format. A scrape first records what is counted rather than
//! recorded as it happens: leases and jobs by state in the store and the revocation worker's
//! attempts. The fleet report's figures are refreshed in the background
//! (`fleet::gauges`); a scrape shows their last values.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::ApiError;
use super::openapi::ErrorResponse;
use crate::lifecycle::Broker;
use crate::metrics;
use crate::store::{JobState, LeaseState};

const JOB_STATES: [JobState; 2] = [JobState::Active, JobState::Ended];
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "Prometheus text format", content_type = "text/plain; version=0.0.4", body = String),
        (status = 404, description = "`not_found`: no metrics recorder in this process", body = ErrorResponse),
    ))]
pub async fn scrape(State(broker): State<Arc<Broker>>) -> Result<Response, ApiError> {
    if !metrics::installed() {
        return Err(ApiError::NotFound);
    }
    record_counts(&broker).await;
    let text = metrics::render().ok_or(ApiError::NotFound)?;
    let mut response = text.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    Ok(response)
}

/// Counts read from the store and the revocation worker now.
async fn record_counts(broker: &Broker) {
    let stats = &broker.revocations.stats;
    metrics::revocations(stats.done.load(Ordering::Relaxed), stats.retried.load(Ordering::Relaxed));
    for state in LeaseState::ALL {
        match broker.store.count_leases(state).await {
            Ok(count) => metrics::leases(state.as_str(), count, state == LeaseState::Revoking),
            Err(error) => tracing::warn!(%error, "metrics: cannot count leases"),
        }
    }
    for state in JOB_STATES {
        match broker.store.count_jobs(state).await {
            Ok(count) => metrics::jobs(state.as_str(), count),
            Err(error) => tracing::warn!(%error, "metrics: cannot count jobs"),
        }
    }
}
