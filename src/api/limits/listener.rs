//! Accepting and serving client connections under the table's cap and each connection's
//! timeouts, with HTTP/1.1 from hyper. axum's own `serve` has neither.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

use super::LimitsConfig;
use super::connections::{Admitted, Connection, ConnectionTable, Timeouts};
use crate::metrics;

/// The largest request head the broker reads; a larger one is answered 431. A job's token is a
/// few KiB; the room beyond lets the verifier, not the HTTP layer, refuse a bloated one.
const MAX_HEAD_BYTES: usize = 128 * 1024;
/// How long answers in progress may take to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// File descriptors kept for the store, the backends and the issuers' key fetches.
const DESCRIPTORS_BESIDES_CLIENTS: usize = 64;

/// When a request's head began on its connection, for the whole-request limit.
#[derive(Clone)]
pub struct RequestClock {
    pub head_started: tokio::time::Instant,
    pub connection: Arc<Connection>,
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets answers in progress finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &LimitsConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    warn_if_descriptors_short(limits.max_connections);
    let table = ConnectionTable::new(limits.max_connections);
    let timeouts =
        Timeouts { header: limits.header_timeout, idle: limits.idle_timeout, request: limits.request_timeout };
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = connections.join_next() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Some(admitted) = table.admit() else {
                        metrics::connection_refused();
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection(stream, peer, admitted, router.clone(), timeouts, stopping.clone()));
                }
                Err(error) => accept_failed(&error, &table).await,
            },
        }
    }
    let _ = stop.send(true);
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async { while connections.join_next().await.is_some() {} });
    if drained.await.is_err() {
        tracing::warn!(open = connections.len(), "shutting down with answers still in progress");
    }
    Ok(())
}

/// Out of file descriptors, a closable connection gives its own up; anything else is the
/// client's doing (a reset before accept) and passes.
async fn accept_failed(error: &io::Error, table: &ConnectionTable) {
    const EMFILE: i32 = 24;
    const ENFILE: i32 = 23;
    if matches!(error.raw_os_error(), Some(EMFILE | ENFILE)) {
        if !table.make_room() {
            tracing::warn!(%error, "cannot accept a connection and none can be closed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        metrics::connection_refused();
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    router: Router,
    timeouts: Timeouts,
    mut stopping: watch::Receiver<bool>,
) {
    let connection = admitted.connection.clone();
    let io = TokioIo::new(WatchedStream { stream, connection: connection.clone() });
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let router = router.clone();
        let connection = connection.clone();
        async move { Ok::<_, Infallible>(answer(router, connection, peer, request).await) }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.max_buf_size(MAX_HEAD_BYTES);
    let served = http.serve_connection(io, service);
    tokio::pin!(served);
    let closed = admitted.connection.closed(timeouts);
    tokio::pin!(closed);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, "connection ended with an error");
                }
                break;
            }
            reason = &mut closed => {
                metrics::connection_closed(reason.label());
                tracing::debug!(reason = reason.label(), "connection closed by the broker");
                break;
            }
            _ = stopping.changed(), if !shutting_down => {
                shutting_down = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
    // `admitted` gives up its place in the table as it drops, after the connection it guards.
}

async fn answer(
    router: Router,
    connection: Arc<Connection>,
    peer: SocketAddr,
    mut request: Request<Incoming>,
) -> axum::response::Response<WatchedBody> {
    let Some(head_started) = connection.request_started() else {
        // Closed to make room while its head completed: its watchdog drops the connection before
        // this answer is written, and nothing has been done for the request.
        let mut response = axum::response::Response::new(WatchedBody { body: Body::empty(), connection });
        *response.status_mut() = axum::http::StatusCode::SERVICE_UNAVAILABLE;
        return response;
    };
    request.extensions_mut().insert(RequestClock { head_started, connection: connection.clone() });
    // Read by handlers as axum's `ConnectInfo`: the exchange's address starts from the TCP peer.
    request.extensions_mut().insert(ConnectInfo(peer));
    let response = match router.oneshot(request.map(Body::new)).await {
        Ok(response) => response,
        Err(infallible) => match infallible {},
    };
    response.map(|body| WatchedBody { body, connection })
}

/// The client's socket, telling its connection when bytes arrive.
struct WatchedStream {
    stream: TcpStream,
    connection: Arc<Connection>,
}

impl AsyncRead for WatchedStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.connection.bytes_received();
        }
        polled
    }
}

impl AsyncWrite for WatchedStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// An answer's body; once hyper has taken all of it (and drops it), the connection is idle.
pub struct WatchedBody {
    body: Body,
    connection: Arc<Connection>,
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.connection.response_sent();
    }
}

impl HttpBody for WatchedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Each client connection holds a file descriptor; a soft limit below the cap means accepts
/// fail (and idle connections are closed to make room) before the cap is reached.
fn warn_if_descriptors_short(max_connections: usize) {
    let Some(soft_limit) = open_files_soft_limit() else { return };
    let needed = max_connections + DESCRIPTORS_BESIDES_CLIENTS;
    if soft_limit < needed {
        tracing::warn!(
            soft_limit,
            needed,
            "the open-files limit is below limits.max_connections plus the broker's own; raise it (LimitNOFILE) or lower the cap"
        );
    }
}

/// `Max open files` from `/proc/self/limits`, where there is one.
fn open_files_soft_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|line| line.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}
