//! The SQLite checkpoint thread, seen through a store: what is written reaches the database file.

use std::time::Instant;

use super::sqlite_checkpoint::INTERVAL;
use crate::clock::now;
use crate::store::{NewLease, NewLeases, Store};

/// Without this thread, nothing reaches the database file before the WAL holds
/// `FALLBACK_PAGES` pages.
#[tokio::test]
async fn written_pages_reach_the_database_file_with_no_writer_checkpointing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let store = Store::connect(&format!("sqlite://{}", file.display())).await.unwrap();
    tokio::time::sleep(INTERVAL * 3).await;
    let migrated = std::fs::metadata(&file).unwrap().len();
    let far = now() + 3600;
    for n in 0..200 {
        let lease = NewLease {
            id: format!("lease-{n}"),
            role: "deploy".into(),
            backend: "vault".into(),
            expires_at: far,
            max_per_job: 0,
            bound_to: None,
        };
        let leases = NewLeases {
            issuer: "github".into(),
            job_id: format!("job-{n}"),
            repository: "octo-org/octo-repo".into(),
            job_keep_until: far,
            spends: None,
            leases: vec![lease],
            ci: Default::default(),
            address: None,
        };
        store.begin_leases(leases).await.unwrap();
    }
    let started = Instant::now();
    while std::fs::metadata(&file).unwrap().len() == migrated {
        assert!(started.elapsed() < INTERVAL * 50, "the database file did not grow");
        tokio::time::sleep(INTERVAL / 2).await;
    }
}
