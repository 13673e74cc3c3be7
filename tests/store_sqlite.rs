//! The SQLite store: replay records and lease transitions, on a real database file.

use ci_creds::backends::RevokeHandle;
use ci_creds::store::{LeaseState, NewLease, Store};

async fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    let store = Store::connect(&url).await.expect("creates the database");
    (dir, store)
}

#[tokio::test]
async fn accepts_a_token_once_until_it_is_pruned_after_expiry() {
    let (_dir, store) = store().await;
    assert!(
        store
            .record_exchange("github", "jti:a", 1_000)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_exchange("github", "jti:a", 1_000)
            .await
            .unwrap(),
        "a replay"
    );
    assert!(
        store
            .record_exchange("gitlab", "jti:a", 1_000)
            .await
            .unwrap(),
        "another issuer's jti is another token"
    );
    assert!(
        store
            .record_exchange("github", "jti:b", 5_000)
            .await
            .unwrap()
    );

    assert_eq!(store.prune_exchanged_tokens(2_000).await.unwrap(), 2);
    assert!(
        !store
            .record_exchange("github", "jti:b", 5_000)
            .await
            .unwrap(),
        "not yet expired: still remembered"
    );
}

#[tokio::test]
async fn keeps_replay_records_across_reopening() {
    let (dir, store) = store().await;
    assert!(
        store
            .record_exchange("github", "jti:a", i64::MAX)
            .await
            .unwrap()
    );
    drop(store);
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    let reopened = Store::connect(&url).await.unwrap();
    assert!(
        !reopened
            .record_exchange("github", "jti:a", i64::MAX)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn activates_only_a_pending_lease() {
    let (_dir, store) = store().await;
    let lease = NewLease {
        id: "l1",
        issuer: "github",
        job_id: "42",
        role: "deploy",
        backend: "vault",
        expires_at: 9_999,
    };
    store.begin_lease(&lease).await.unwrap();
    let leases = store.leases_of_job("github", "42").await.unwrap();
    assert_eq!(
        (leases.len(), leases[0].state, leases[0].handle.clone()),
        (1, LeaseState::Pending, None)
    );

    let handle = RevokeHandle::Vault {
        accessor: "acc".into(),
    };
    assert!(store.activate_lease("l1", &handle).await.unwrap());
    assert!(
        !store.activate_lease("l1", &handle).await.unwrap(),
        "already active"
    );
    let leases = store.leases_of_job("github", "42").await.unwrap();
    assert_eq!(
        (leases[0].state, leases[0].handle.clone()),
        (LeaseState::Active, Some(handle.clone()))
    );

    store
        .set_lease_state("l1", LeaseState::Revoking)
        .await
        .unwrap();
    assert!(
        !store.activate_lease("l1", &handle).await.unwrap(),
        "a lease being revoked never becomes active again"
    );
}
