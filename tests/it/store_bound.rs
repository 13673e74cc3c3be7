//! The address block of each bound lease, on SQLite and on PostgreSQL: written with the lease
//! (the batch insert of each database), and read back only while the lease is live, which is
//! what keeps its Vault token role from being deleted.

use ci_creds::clock::now;
use ci_creds::store::{LeaseBegun, NewLeases};

use crate::support::store::{Subject, handle, lease, on_every_store, postgres, sqlite};

on_every_store!(knows_the_blocks_of_pending_and_unexpired_active_leases_only);

fn bound_lease(id: &str, job_id: &str, expires_at: i64, block: Option<&str>) -> NewLeases {
    let mut leases = lease(id, job_id, expires_at);
    leases.leases[0].bound_to = block.map(str::to_owned);
    leases
}

async fn knows_the_blocks_of_pending_and_unexpired_active_leases_only(subject: Subject) {
    let store = subject.store;
    let now = now();
    let far = now + 3600;
    for (id, job, expires_at, block) in [
        ("pending", "1", far, Some("127.0.0.5/32")),
        ("active", "2", far, Some("10.0.0.0/24")),
        ("unbound", "3", far, None),
        ("expired", "4", now - 10, Some("192.0.2.0/24")),
        ("revoking", "5", far, Some("198.51.100.7/32")),
        ("failed", "6", far, Some("2001:db8::/64")),
    ] {
        assert_eq!(store.begin_leases(bound_lease(id, job, expires_at, block)).await.unwrap(), LeaseBegun::Begun);
    }
    for (id, expires_at) in [("active", far), ("unbound", far), ("expired", now - 10), ("revoking", far)] {
        store.activate_lease(id, &handle(id), expires_at).await.unwrap();
    }
    store.request_revocation("revoking").await.unwrap();
    store.set_lease_state("failed", ci_creds::store::LeaseState::Failed).await.unwrap();

    let mut blocks = store.bound_blocks_in_use(now).await.unwrap();
    blocks.sort();
    assert_eq!(blocks, vec!["10.0.0.0/24".to_owned(), "127.0.0.5/32".to_owned()]);
}
