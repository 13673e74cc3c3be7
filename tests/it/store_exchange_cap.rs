//! The store's count behind `max_exchanges_per_job`, on every database: a write past a role's cap
//! for its job leaves nothing behind, its token included, and concurrent writers of one job,
//! batched or on other connections, never pass it.

use std::sync::Arc;

use ci_creds::clock::now;
use ci_creds::store::{LeaseBegun, LeaseState, NewLease, NewLeases, SpentToken, Store};

use crate::support::store::{Subject, lease, on_every_store, postgres, sqlite};

on_every_store!(
    refuses_a_write_past_a_roles_cap_and_leaves_its_token_unspent,
    concurrent_writes_of_one_job_never_pass_its_cap,
);

/// Job `job_id`'s write of one lease `id` of `role`, capped at `max`, spending token `jti`.
fn capped(id: &str, job_id: &str, role: &str, max: u32, jti: &str) -> NewLeases {
    let far = now() + 3600;
    NewLeases {
        spends: Some(SpentToken { token_id: jti.into(), legacy_id: None, expires_at: far }),
        leases: vec![NewLease {
            id: id.into(),
            role: role.into(),
            backend: "vault".into(),
            expires_at: far,
            max_per_job: max,
            bound_to: None,
        }],
        address: Some("203.0.113.9".into()),
        ..lease(id, job_id, far)
    }
}

async fn refuses_a_write_past_a_roles_cap_and_leaves_its_token_unspent(subject: Subject) {
    let store = subject.store;
    assert_eq!(store.begin_leases(capped("l1", "1", "deploy", 2, "jti:1")).await.unwrap(), LeaseBegun::Begun);
    assert_eq!(store.begin_leases(capped("l2", "1", "deploy", 2, "jti:2")).await.unwrap(), LeaseBegun::Begun);
    // A lease that failed still counts: its exchange happened.
    store.set_lease_state("l2", LeaseState::Failed).await.unwrap();
    let refused = LeaseBegun::CapReached { role: "deploy".into() };
    assert_eq!(store.begin_leases(capped("l3", "1", "deploy", 2, "jti:3")).await.unwrap(), refused);
    assert_eq!(
        store.begin_leases(capped("l3", "1", "deploy", 2, "jti:3")).await.unwrap(),
        refused,
        "the refused write's token was not spent: it is refused for the cap again, not as a replay"
    );
    assert_eq!(store.leases_of_job("github", "1").await.unwrap().len(), 2, "no lease written past the cap");

    assert_eq!(store.begin_leases(capped("l4", "1", "read", 2, "jti:4")).await.unwrap(), LeaseBegun::Begun);
    assert_eq!(store.begin_leases(capped("l5", "2", "deploy", 2, "jti:5")).await.unwrap(), LeaseBegun::Begun);
    assert_eq!(
        store.begin_leases(capped("l6", "1", "deploy", 0, "jti:6")).await.unwrap(),
        LeaseBegun::Begun,
        "0 is no cap"
    );
    let two_roles = NewLeases {
        leases: vec![
            NewLease {
                id: "l7".into(),
                role: "read".into(),
                backend: "vault".into(),
                expires_at: now() + 3600,
                max_per_job: 5,
                bound_to: None,
            },
            NewLease {
                id: "l8".into(),
                role: "deploy".into(),
                backend: "vault".into(),
                expires_at: now() + 3600,
                max_per_job: 3,
                bound_to: None,
            },
        ],
        ..capped("l7", "1", "read", 5, "jti:7")
    };
    assert_eq!(store.begin_leases(two_roles).await.unwrap(), refused, "one capped role refuses the whole write");
    assert!(store.leases_of_job("github", "1").await.unwrap().iter().all(|l| l.id != "l7"), "all or nothing");

    let job = store.jobs(10).await.unwrap().into_iter().find(|job| job.job_id == "1").unwrap();
    assert_eq!(job.address.as_deref(), Some("203.0.113.9"));
}

async fn concurrent_writes_of_one_job_never_pass_its_cap(subject: Subject) {
    // Two pools on one database: two replicas' group commits, and batches within each.
    let stores = [Arc::new(subject.store), Arc::new(Store::connect(&subject.url).await.unwrap())];
    let mut writes = Vec::new();
    for n in 0..24 {
        let store = stores[n % 2].clone();
        writes.push(tokio::spawn(async move {
            store.begin_leases(capped(&format!("l{n}"), "burst", "deploy", 5, &format!("jti:{n}"))).await.unwrap()
        }));
    }
    let mut begun = 0;
    for write in writes {
        match write.await.unwrap() {
            LeaseBegun::Begun => begun += 1,
            LeaseBegun::CapReached { role } => assert_eq!(role, "deploy"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(begun, 5);
    assert_eq!(stores[0].leases_of_job("github", "burst").await.unwrap().len(), 5);
}
