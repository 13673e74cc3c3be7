//! Throughput with many requests in flight, as a server sees them: `iters` operations spread
//! over `CONCURRENCY` tasks on the runtime's worker threads; criterion divides the elapsed time.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// As in the load benchmark (`benches/load/run.sh --concurrency 32`).
pub const CONCURRENCY: usize = 32;

pub async fn run<F, Fut>(iters: u64, operation: F) -> Duration
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let operation = Arc::new(operation);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (operation, next) = (operation.clone(), next.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < iters {
                    operation().await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a benchmark task panicked");
    }
    started.elapsed()
}
