//! The open client connections and what each is doing. A connection that holds no request in
//! progress (idle, or still sending its head) is what a full table closes to make room, and
//! what a timeout closes when the client is too slow.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics;

/// Why the broker closed a connection; also the `reason` label of its metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    HeaderTimeout,
    IdleTimeout,
    RequestTimeout,
    /// Closed to make room for a new connection when the table was full.
    Evicted,
}

impl CloseReason {
    pub fn label(self) -> &'static str {
        match self {
            Self::HeaderTimeout => "header_timeout",
            Self::IdleTimeout => "idle_timeout",
            Self::RequestTimeout => "request_timeout",
            Self::Evicted => "connection_cap",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Waiting for a complete request head, since connecting or since the first byte after idling.
    Head {
        since: Instant,
    },
    /// Kept alive between requests, no byte received since the last answer.
    Idle {
        since: Instant,
    },
    /// The head is in; the body is still arriving.
    Body {
        head_started: Instant,
    },
    /// The whole request is in and being answered.
    Handling,
    Closing(CloseReason),
}

/// The timeouts a connection's watchdog enforces.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
    pub request: Duration,
}

/// When the request timeout passes, the API answers 408 itself; the watchdog closes the
/// connection only if that answer has not gone out this much later.
const REQUEST_TIMEOUT_GRACE: Duration = Duration::from_secs(1);

struct State {
    phase: Phase,
    /// Counts phase changes, so a watchdog that slept knows whether its deadline still applies.
    epoch: u64,
}

pub struct Connection {
    id: u64,
    state: Mutex<State>,
    changed: Notify,
}

impl Connection {
    fn new(id: u64) -> Self {
        let state = State { phase: Phase::Head { since: Instant::now() }, epoch: 0 };
        Self { id, state: Mutex::new(state), changed: Notify::new() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain data.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn enter(&self, state: &mut State, phase: Phase) {
        state.phase = phase;
        state.epoch += 1;
        self.changed.notify_one();
    }

    /// Bytes arrived: an idle connection has begun its next request head.
    pub fn bytes_received(&self) {
        let mut state = self.state();
        if let Phase::Idle { .. } = state.phase {
            self.enter(&mut state, Phase::Head { since: Instant::now() });
        }
    }

    /// The head is complete; returns when it began, or `None` if the connection is being closed.
    pub fn request_started(&self) -> Option<Instant> {
        let mut state = self.state();
        let head_started = match state.phase {
            Phase::Head { since } | Phase::Idle { since } => since,
            Phase::Body { head_started } => head_started,
            Phase::Handling => Instant::now(),
            Phase::Closing(_) => return None,
        };
        self.enter(&mut state, Phase::Body { head_started });
        Some(head_started)
    }

    /// The whole request body is in: the request is now answered, never cut.
    pub fn body_received(&self) {
        let mut state = self.state();
        if let Phase::Body { .. } = state.phase {
            self.enter(&mut state, Phase::Handling);
        }
    }

    /// The answer has been handed to the connection in full.
    pub fn response_sent(&self) {
        let mut state = self.state();
        if !matches!(state.phase, Phase::Closing(_)) {
            self.enter(&mut state, Phase::Idle { since: Instant::now() });
        }
    }

    /// Closes the connection if it is in one of `phases`; whether it was.
    fn close_if(&self, closable: impl Fn(&Phase) -> bool, reason: CloseReason) -> bool {
        let mut state = self.state();
        if !closable(&state.phase) {
            return false;
        }
        self.enter(&mut state, Phase::Closing(reason));
        true
    }

    /// Resolves when the connection must be closed, and why; the caller drops it then.
    pub async fn closed(&self, timeouts: Timeouts) -> CloseReason {
        loop {
            let (epoch, deadline) = {
                let state = self.state();
                let deadline = match state.phase {
                    Phase::Head { since } => Some((since + timeouts.header, CloseReason::HeaderTimeout)),
                    Phase::Idle { since } => Some((since + timeouts.idle, CloseReason::IdleTimeout)),
                    Phase::Body { head_started } => {
                        Some((head_started + timeouts.request + REQUEST_TIMEOUT_GRACE, CloseReason::RequestTimeout))
                    }
                    Phase::Handling => None,
                    Phase::Closing(reason) => return reason,
                };
                (state.epoch, deadline)
            };
            let Some((at, reason)) = deadline else {
                self.changed.notified().await;
                continue;
            };
            tokio::select! {
                () = tokio::time::sleep_until(at) => {
                    let mut state = self.state();
                    if state.epoch == epoch {
                        self.enter(&mut state, Phase::Closing(reason));
                        return reason;
                    }
                }
                () = self.changed.notified() => {}
            }
        }
    }
}

/// Every open client connection, oldest first.
pub struct ConnectionTable {
    max: usize,
    open: Mutex<BTreeMap<u64, Arc<Connection>>>,
    next_id: AtomicU64,
}

/// A connection's place in the table, given up when dropped.
pub struct Admitted {
    table: Arc<ConnectionTable>,
    pub connection: Arc<Connection>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.table.open();
        open.remove(&self.connection.id);
        metrics::connections_open(open.len());
    }
}

impl ConnectionTable {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self { max, open: Mutex::new(BTreeMap::new()), next_id: AtomicU64::new(0) })
    }

    fn open(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Connection>>> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for a new connection, closing the oldest closable one when the table is full;
    /// `None` when every open connection is answering a request.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut open = self.open();
        while open.len() >= self.max {
            Self::evict_oldest_closable(&mut open)?;
        }
        let connection = Arc::new(Connection::new(self.next_id.fetch_add(1, Ordering::Relaxed)));
        open.insert(connection.id, connection.clone());
        metrics::connections_open(open.len());
        Some(Admitted { table: self.clone(), connection })
    }

    /// Closes the oldest closable connection, to free its file descriptor; whether there was one.
    pub fn make_room(&self) -> bool {
        Self::evict_oldest_closable(&mut self.open()).is_some()
    }

    /// First the oldest connection that holds nothing in progress; failing that, the oldest that
    /// is still sending its body (nothing has been done for it yet). Requests being answered are
    /// never cut.
    fn evict_oldest_closable(open: &mut BTreeMap<u64, Arc<Connection>>) -> Option<()> {
        let idle_or_head = |phase: &Phase| matches!(phase, Phase::Idle { .. } | Phase::Head { .. });
        let sending_body = |phase: &Phase| matches!(phase, Phase::Body { .. });
        let id = open
            .values()
            .find(|connection| connection.close_if(idle_or_head, CloseReason::Evicted))
            .or_else(|| open.values().find(|connection| connection.close_if(sending_body, CloseReason::Evicted)))
            .map(|connection| connection.id)?;
        open.remove(&id);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUTS: Timeouts =
        Timeouts { header: Duration::from_secs(10), idle: Duration::from_secs(30), request: Duration::from_secs(30) };

    #[test]
    fn a_full_table_closes_the_oldest_idle_connection_and_keeps_requests_in_progress() {
        let table = ConnectionTable::new(3);
        let answering = table.admit().expect("room");
        answering.connection.request_started();
        answering.connection.body_received();
        let idle = table.admit().expect("room");
        idle.connection.request_started();
        idle.connection.response_sent();
        let _sending_head = table.admit().expect("room");

        let _newest = table.admit().expect("room made by closing the idle connection");
        assert!(matches!(idle.connection.state().phase, Phase::Closing(CloseReason::Evicted)));
        assert!(matches!(answering.connection.state().phase, Phase::Handling));
    }

    #[test]
    fn a_table_full_of_requests_being_answered_refuses_a_new_connection() {
        let table = ConnectionTable::new(2);
        let held: Vec<Admitted> = (0..2).map(|_| table.admit().expect("room")).collect();
        for admitted in &held {
            admitted.connection.request_started();
            admitted.connection.body_received();
        }
        assert!(table.admit().is_none());
        drop(held);
        assert!(table.admit().is_some(), "closed connections give their places back");
    }

    #[test]
    fn a_slow_body_is_closed_only_when_nothing_idle_is_left() {
        let table = ConnectionTable::new(2);
        let sending_body = table.admit().expect("room");
        sending_body.connection.request_started();
        let sending_head = table.admit().expect("room");

        let _third = table.admit().expect("room");
        assert!(matches!(sending_head.connection.state().phase, Phase::Closing(CloseReason::Evicted)));
        assert!(matches!(sending_body.connection.state().phase, Phase::Body { .. }));
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_sends_no_head_is_closed_at_the_header_timeout() {
        let connection = Connection::new(0);
        let started = Instant::now();
        assert_eq!(connection.closed(TIMEOUTS).await, CloseReason::HeaderTimeout);
        assert_eq!(started.elapsed(), TIMEOUTS.header);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_gets_the_idle_timeout_then_the_header_timeout_from_its_first_byte() {
        let connection = Arc::new(Connection::new(0));
        connection.request_started();
        connection.body_received();
        connection.response_sent();
        let watchdog = tokio::spawn({
            let connection = connection.clone();
            async move { connection.closed(TIMEOUTS).await }
        });
        tokio::time::sleep(Duration::from_secs(25)).await;
        connection.bytes_received();
        let started = Instant::now();
        assert_eq!(watchdog.await.expect("watchdog runs"), CloseReason::HeaderTimeout);
        assert_eq!(started.elapsed(), TIMEOUTS.header);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_being_answered_is_never_cut() {
        let connection = Arc::new(Connection::new(0));
        connection.request_started();
        connection.body_received();
        let watchdog = tokio::spawn({
            let connection = connection.clone();
            async move { connection.closed(TIMEOUTS).await }
        });
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!watchdog.is_finished());
        connection.response_sent();
        assert_eq!(watchdog.await.expect("watchdog runs"), CloseReason::IdleTimeout);
    }
}
