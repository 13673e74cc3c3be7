//! Admission of a request: its whole body within the request timeout, then one of the in-flight
//! slots within a short wait, else 503 `overloaded`. Health, readiness and metrics skip both, so
//! an orchestrator sees a busy broker as busy, not dead.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use super::LimitsConfig;
use super::listener::RequestClock;
use crate::api::ApiError;
use crate::api::body::read_limited;
use crate::metrics;

/// Paths answered without a slot; each is cheap and bounded by its own work.
const EXEMPT: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

pub struct InFlight {
    max: usize,
    slots: Semaphore,
    wait: Duration,
    request_timeout: Duration,
}

impl InFlight {
    pub fn new(limits: &LimitsConfig) -> Arc<Self> {
        Arc::new(Self {
            max: limits.max_in_flight,
            slots: Semaphore::new(limits.max_in_flight),
            wait: limits.in_flight_wait,
            request_timeout: limits.request_timeout,
        })
    }
}

pub async fn admit(State(in_flight): State<Arc<InFlight>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if EXEMPT.contains(&path) {
        return next.run(request).await;
    }
    let body_limit = crate::api::body_limit(path);
    let clock = request.extensions().get::<RequestClock>().cloned();
    let (parts, body) = request.into_parts();
    // The body is read before a slot is taken, so a client sending slowly holds only its own
    // connection, never a slot that legitimate jobs need.
    let read = read_limited(body, body_limit);
    let body = match &clock {
        Some(clock) => match tokio::time::timeout_at(clock.head_started + in_flight.request_timeout, read).await {
            Ok(body) => body,
            Err(_) => {
                metrics::connection_closed("request_timeout");
                return ApiError::RequestTimeout.into_response();
            }
        },
        None => read.await,
    };
    let body = match body {
        Ok(body) => body,
        Err(error) => return error.into_response(),
    };
    if let Some(clock) = &clock {
        clock.connection.body_received();
    }
    let Ok(Ok(slot)) = tokio::time::timeout(in_flight.wait, in_flight.slots.acquire()).await else {
        metrics::overloaded();
        return ApiError::Overloaded.into_response();
    };
    in_flight.report();
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
    drop(slot);
    in_flight.report();
    response
}

impl InFlight {
    fn report(&self) {
        metrics::requests_in_flight(self.max - self.slots.available_permits());
    }
}
