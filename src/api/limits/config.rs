//! `[limits]`: how long a client may take and how much of the broker it may hold. Every default
//! is safe on the open internet; none needs a proxy in front of the broker.

use std::time::Duration;

use serde::Deserialize;

/// `[limits]` in the broker's config.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// From connecting (or from the first byte after an idle keep-alive) to a complete request
    /// head; a client that has not sent one by then is disconnected.
    #[serde(default = "default_header_timeout", deserialize_with = "crate::duration::human")]
    pub header_timeout: Duration,
    /// How long a kept-alive connection may sit between requests without sending a byte.
    #[serde(default = "default_idle_timeout", deserialize_with = "crate::duration::human")]
    pub idle_timeout: Duration,
    /// From the start of a request's head to the last byte of its body; past it the client is
    /// answered 408 `request_timeout` and disconnected.
    #[serde(default = "default_request_timeout", deserialize_with = "crate::duration::human")]
    pub request_timeout: Duration,
    /// Open client connections. When full, the oldest connection that is idle or has not sent
    /// a complete request is closed to make room for a new one.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Requests being handled at once (health, readiness and metrics excepted). Past it the
    /// answer is 503 `overloaded` with `Retry-After`.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// How long a request may wait for a free in-flight slot before it is answered 503.
    #[serde(default = "default_in_flight_wait", deserialize_with = "crate::duration::human")]
    pub in_flight_wait: Duration,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            header_timeout: default_header_timeout(),
            idle_timeout: default_idle_timeout(),
            request_timeout: default_request_timeout(),
            max_connections: default_max_connections(),
            max_in_flight: default_max_in_flight(),
            in_flight_wait: default_in_flight_wait(),
        }
    }
}

impl LimitsConfig {
    /// The first key whose value cannot work, and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.header_timeout.is_zero() {
            return Err(("limits.header_timeout", "must be positive".into()));
        }
        if self.idle_timeout.is_zero() {
            return Err(("limits.idle_timeout", "must be positive".into()));
        }
        if self.request_timeout < self.header_timeout {
            return Err((
                "limits.request_timeout",
                "must be at least limits.header_timeout: it includes the head".into(),
            ));
        }
        if self.max_in_flight == 0 {
            return Err(("limits.max_in_flight", "must be at least 1".into()));
        }
        // Requests in flight hold their connections; room beyond them is what health checks and
        // new clients get when every in-flight slot is taken.
        if self.max_connections <= self.max_in_flight {
            return Err(("limits.max_connections", "must be larger than limits.max_in_flight".into()));
        }
        Ok(())
    }
}

fn default_header_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_idle_timeout() -> Duration {
    Duration::from_secs(30)
}

fn default_request_timeout() -> Duration {
    Duration::from_secs(30)
}

/// Well under the common soft limit of 1,024 open files, leaving room for the store's and the
/// backends' connections.
fn default_max_connections() -> usize {
    512
}

fn default_max_in_flight() -> usize {
    128
}

fn default_in_flight_wait() -> Duration {
    Duration::from_millis(100)
}
