//! SQLite's WAL checkpoints on a thread of their own. By default, the connection whose commit
//! grows the WAL past 1,000 pages checkpoints right after it: it copies the WAL's pages back
//! into the database file and syncs both files (with `synchronous = NORMAL`, the only syncs
//! there are). On the group commit's thread, every exchange of that batch, and of the batches
//! queued behind it, would wait for those syncs. Here a thread checkpoints every
//! [`INTERVAL`], passively: it never waits for a writer or a reader, nor makes one wait.
//!
//! A passive checkpoint copies pages but cannot restart the WAL from its beginning while writes
//! keep coming: only a writer can, once every page is copied. So the writers' own checkpoint
//! stays, at [`FALLBACK_PAGES`]: it then finds the pages already copied, syncs what little is
//! left, and the next write starts the WAL over. The WAL file grows to about that size.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

use rusqlite::Connection;

use super::Error;

pub(super) const INTERVAL: Duration = Duration::from_millis(100);

/// Every connection's own automatic checkpoint, in pages (4 KiB each): how large the WAL grows
/// before a writer restarts it, ten times SQLite's default, so the committing thread syncs ten
/// times less often.
pub(super) const FALLBACK_PAGES: u32 = 10_000;

/// The checkpointing thread; it ends when this is dropped.
pub(super) struct Checkpoints {
    _stop: Sender<()>,
}

impl Checkpoints {
    pub(super) fn start(path: &Path, settings: &str) -> Result<Self, Error> {
        let connection = Connection::open(path)?;
        connection.execute_batch(settings)?;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("ci-creds-sqlite-checkpoint".into())
            .spawn(move || {
                let mut failing = false;
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    match connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                        Ok(()) => failing = false,
                        // Once per spell of failures: the writers' own checkpoints take over.
                        Err(error) if !failing => {
                            failing = true;
                            tracing::warn!(%error, "a WAL checkpoint failed");
                        }
                        Err(_) => {}
                    }
                }
            })
            .map_err(|error| Error::Unavailable(sqlx::Error::Io(error)))?;
        Ok(Self { _stop: stop })
    }
}
