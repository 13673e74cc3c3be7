//! Periodic housekeeping: forget what has expired.

use std::time::Duration;

use crate::store::Store;

/// Replay records are kept this long past a token's `exp`, beyond the clock skew verification
/// tolerates, so a token is never forgotten while it could still verify.
const REPLAY_RETENTION_SECONDS: i64 = 120;

pub async fn run(store: Store, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        sweep(&store).await;
    }
}

async fn sweep(store: &Store) {
    let cutoff = time::OffsetDateTime::now_utc().unix_timestamp() - REPLAY_RETENTION_SECONDS;
    match store.prune_exchanged_tokens(cutoff).await {
        Ok(0) => {}
        Ok(pruned) => tracing::debug!(pruned, "forgot expired replay records"),
        Err(error) => tracing::warn!(%error, "sweeping replay records failed"),
    }
}
