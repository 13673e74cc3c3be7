//! Leases a broker left pending when it died mid-mint are given up, on every store: the job's end
//! then waits on nothing, and a handle that arrives after all is not taken for an active lease.

use ci_creds::clock::now;
use ci_creds::store::{EndOutcome, LeaseBegun, LeaseState};

use crate::support::store::{Subject, handle, lease, on_every_store, postgres, sqlite};

on_every_store!(
    gives_up_leases_left_without_a_handle_and_nothing_else,
    a_job_whose_only_lease_was_given_up_has_nothing_left_to_revoke,
    a_handle_arriving_after_the_give_up_leaves_the_lease_failed,
    finds_the_leases_of_one_backend_left_without_a_handle,
);

/// The state of lease `id` of job `job_id`.
async fn state(subject: &Subject, job_id: &str, id: &str) -> LeaseState {
    let leases = subject.store.leases_of_job("github", job_id).await.unwrap();
    leases.iter().find(|lease| lease.id == id).expect("the lease is stored").state
}

async fn gives_up_leases_left_without_a_handle_and_nothing_else(subject: Subject) {
    let store = &subject.store;
    let far = now() + 3600;
    for (id, job) in [("pending", "1"), ("active", "2"), ("ended-while-pending", "3"), ("ended-when-active", "4")] {
        assert_eq!(store.begin_leases(lease(id, job, far)).await.unwrap(), LeaseBegun::Begun);
    }
    store.activate_lease("active", &handle("acc-active"), far).await.unwrap();
    store.activate_lease("ended-when-active", &handle("acc-ended"), far).await.unwrap();
    store.end_job("github", "3", "self", None, far).await.unwrap();
    store.end_job("github", "4", "self", None, far).await.unwrap();

    assert_eq!(store.give_up_pending_leases(now() - 120).await.unwrap(), 0, "begun just now: still minting");
    assert_eq!(store.give_up_pending_leases(now() + 1).await.unwrap(), 2);

    assert_eq!(state(&subject, "1", "pending").await, LeaseState::Failed);
    assert_eq!(state(&subject, "2", "active").await, LeaseState::Active);
    assert_eq!(state(&subject, "3", "ended-while-pending").await, LeaseState::Failed);
    assert_eq!(state(&subject, "4", "ended-when-active").await, LeaseState::Revoking, "it has a handle to revoke");
    let given_up = store.leases_of_job("github", "1").await.unwrap();
    assert!(given_up[0].last_error.as_deref().is_some_and(|error| error.contains("never activated")));
}

async fn a_job_whose_only_lease_was_given_up_has_nothing_left_to_revoke(subject: Subject) {
    let store = &subject.store;
    let far = now() + 3600;
    store.begin_leases(lease("l1", "5", far)).await.unwrap();
    store.give_up_pending_leases(now() + 1).await.unwrap();

    assert_eq!(store.end_job("github", "5", "self", None, far).await.unwrap(), EndOutcome::Ended { revoking: 0 });
    assert_eq!(store.count_leases(LeaseState::Revoking).await.unwrap(), 0);
    assert_eq!(store.count_leases(LeaseState::Pending).await.unwrap(), 0);
}

async fn a_handle_arriving_after_the_give_up_leaves_the_lease_failed(subject: Subject) {
    let store = &subject.store;
    let far = now() + 3600;
    store.begin_leases(lease("late", "6", far)).await.unwrap();
    store.give_up_pending_leases(now() + 1).await.unwrap();

    let after = store.activate_lease("late", &handle("acc-late"), far).await.unwrap();
    assert_eq!(after, LeaseState::Failed, "the exchange learns it must revoke the credential itself");
    assert_eq!(state(&subject, "6", "late").await, LeaseState::Failed);
    assert!(store.claim_revocations(10, 60_000).await.unwrap().is_empty());
}

async fn finds_the_leases_of_one_backend_left_without_a_handle(subject: Subject) {
    let store = &subject.store;
    let far = now() + 3600;
    let mut aws = lease("aws-pending", "8", far);
    aws.leases[0].backend = "aws".into();
    store.begin_leases(aws).await.unwrap();
    let mut aws_active = lease("aws-active", "9", far);
    aws_active.leases[0].backend = "aws".into();
    store.begin_leases(aws_active).await.unwrap();
    store.activate_lease("aws-active", &handle("unused"), far).await.unwrap();
    store.begin_leases(lease("vault-pending", "10", far)).await.unwrap();

    let found = store.unrecorded_leases("aws", now() + 1, 100).await.unwrap();
    let ids: Vec<&str> = found.iter().map(|lease| lease.id.as_str()).collect();
    assert_eq!(ids, ["aws-pending"]);
    assert!(store.unrecorded_leases("aws", now() - 120, 100).await.unwrap().is_empty(), "begun just now");
}
