//! Concurrent exchanges' writes commit together: each write fares exactly as it would alone, on
//! SQLite and on PostgreSQL. The tests run on one thread, so writes queued in the same poll reach
//! the committing task together, as one batch.

use ci_creds::clock::now;
use ci_creds::store::{GroupCommitStats, JobState, LeaseBegun, LeaseState, NewLeases, SpentToken};
use futures_util::future::join_all;

use crate::support;
use crate::support::store::{Subject, handle, postgres, sqlite};

macro_rules! on_every_store {
    ($($test:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[tokio::test]
            async fn $test() {
                super::$test(super::sqlite().await).await;
            })*
        }
        mod on_postgres {
            $(#[tokio::test]
            async fn $test() {
                super::$test(super::postgres().await).await;
            })*
        }
    };
}

on_every_store!(
    concurrent_leases_begin_together_as_each_would_alone,
    concurrent_activations_and_begins_commit_together,
    a_failing_write_fails_alone,
);

/// An exchange of job `job_id` that begins lease `id` and spends the token `spends`, if any.
fn lease(id: &str, job_id: &str, spends: Option<&str>, far: i64) -> NewLeases {
    let spends = spends.map(|token_id| SpentToken { token_id: token_id.into(), legacy_id: None, expires_at: far });
    NewLeases { spends, ..support::store::lease(id, job_id, far) }
}

/// The same for a token without `jti`, spent under its signed part's id and its whole text's.
fn lease_without_jti(id: &str, job_id: &str, signed: &str, whole: &str, far: i64) -> NewLeases {
    let spends = SpentToken { token_id: signed.into(), legacy_id: Some(whole.into()), expires_at: far };
    NewLeases { spends: Some(spends), ..support::store::lease(id, job_id, far) }
}

async fn concurrent_leases_begin_together_as_each_would_alone(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    store.end_job("github", "ended", "webhook:github", None, far).await.unwrap();
    assert!(store.record_exchange("github", "jti:spent", far).await.unwrap());
    assert!(store.record_exchange("github", "sha256:before-upgrade", far).await.unwrap());
    let others: Vec<(String, String)> = (0..20).map(|n| (format!("lease-{n}"), format!("job-{n}"))).collect();
    let tokens: Vec<String> = (0..20).map(|n| format!("jti:{n}")).collect();

    let mut cases = vec![
        ("a fresh token", lease("fresh", "1", Some("jti:fresh"), far), LeaseBegun::Begun),
        ("the same job's second role", lease("fresh-2", "1", None, far), LeaseBegun::Begun),
        ("the same token again", lease("again", "1", Some("jti:fresh"), far), LeaseBegun::Replayed),
        ("a token spent before", lease("old", "2", Some("jti:spent"), far), LeaseBegun::Replayed),
        ("an ended job", lease("late", "ended", Some("jti:late"), far), LeaseBegun::JobEnded),
        ("an ended job, its token again", lease("late-2", "ended", Some("jti:late"), far), LeaseBegun::JobEnded),
        ("no jti", lease_without_jti("es", "3", "signed-sha256:m", "sha256:m1", far), LeaseBegun::Begun),
        (
            "no jti, its signature re-encoded",
            lease_without_jti("es-2", "3", "signed-sha256:m", "sha256:m2", far),
            LeaseBegun::Replayed,
        ),
        (
            "no jti, spent before the upgrade",
            lease_without_jti("up", "4", "signed-sha256:u", "sha256:before-upgrade", far),
            LeaseBegun::Replayed,
        ),
        (
            "no jti, an ended job",
            lease_without_jti("late-3", "ended", "signed-sha256:e", "sha256:e1", far),
            LeaseBegun::JobEnded,
        ),
    ];
    for ((id, job), token) in others.iter().zip(&tokens) {
        cases.push(("another job", lease(id, job, Some(token), far), LeaseBegun::Begun));
    }
    let outcomes = join_all(cases.iter().map(|(_, lease, _)| store.begin_leases(lease.clone()))).await;
    for ((case, lease, expected), outcome) in cases.iter().zip(outcomes) {
        assert_eq!(outcome.unwrap(), *expected, "{case} ({})", lease.leases[0].id);
    }
    assert_eq!(
        store.group_commit_stats(),
        GroupCommitStats { batches: 1, batched_writes: cases.len() as u64, batches_failed: 0 },
        "one transaction for all"
    );

    let job1 = store.leases_of_job("github", "1").await.unwrap();
    let ids: Vec<(&str, LeaseState)> = job1.iter().map(|lease| (lease.id.as_str(), lease.state)).collect();
    assert_eq!(ids, [("fresh", LeaseState::Pending), ("fresh-2", LeaseState::Pending)]);
    assert!(store.leases_of_job("github", "ended").await.unwrap().is_empty());
    let jobs = store.jobs(100).await.unwrap();
    let ended = jobs.iter().find(|job| job.job_id == "ended").unwrap();
    assert_eq!(ended.repository, None, "a refused write leaves the ended job's record as it was");
    assert!(store.leases_of_job("github", "2").await.unwrap().is_empty(), "a replay writes no lease");
    assert_eq!(
        store.count_jobs(JobState::Active).await.unwrap(),
        22,
        "jobs 1, 3 and the 20 others; not the replaying ones"
    );
    assert!(!store.record_exchange("github", "jti:19", far).await.unwrap(), "the others' tokens are spent");
    assert!(
        store.record_exchange("github", "jti:late", far).await.unwrap(),
        "a token refused for its ended job stays unspent, as when written alone"
    );
    for id in ["signed-sha256:e", "sha256:e1"] {
        assert!(
            store.record_exchange("github", id, far).await.unwrap(),
            "both ids of a token refused for its ended job"
        );
    }
    assert!(!store.record_exchange("github", "sha256:m1", far).await.unwrap(), "a token's legacy id is spent with it");
}

async fn concurrent_activations_and_begins_commit_together(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    for (id, job) in [("a", "1"), ("b", "1"), ("c", "2")] {
        assert_eq!(store.begin_leases(lease(id, job, None, far)).await.unwrap(), LeaseBegun::Begun);
    }
    store.end_job("github", "2", "self", None, far).await.unwrap();
    let written_alone = store.group_commit_stats();

    let (handles, ids) = (["a", "b", "c", "gone"].map(handle), ["a", "b", "c", "gone"]);
    let activations = join_all(ids.iter().zip(&handles).map(|(id, handle)| store.activate_lease(id, handle, far)));
    let new_leases = [lease("d", "3", Some("jti:d"), far), lease("e", "2", Some("jti:e"), far)];
    let begins = join_all(new_leases.iter().map(|lease| store.begin_leases(lease.clone())));
    let (activated, begun) = tokio::join!(activations, begins);

    let activated: Vec<_> = activated.into_iter().map(|outcome| outcome.map_err(|e| e.to_string())).collect();
    assert_eq!(activated[0], Ok(LeaseState::Active));
    assert_eq!(activated[1], Ok(LeaseState::Active));
    assert_eq!(activated[2], Ok(LeaseState::Revoking), "its job ended while it was minted: kept for revocation");
    assert!(activated[3].as_ref().is_err_and(|e| e.contains("lease gone vanished")), "{:?}", activated[3]);
    let begun: Vec<_> = begun.into_iter().map(Result::unwrap).collect();
    assert_eq!(begun, [LeaseBegun::Begun, LeaseBegun::JobEnded]);

    let stats = store.group_commit_stats();
    assert_eq!(written_alone.batches, 0, "one write at a time is written alone");
    assert_eq!(stats, GroupCommitStats { batches: 1, batched_writes: 6, batches_failed: 0 });
    let c = store.leases_of_job("github", "2").await.unwrap();
    assert_eq!((c.len(), c[0].handle.clone()), (1, Some(handle("c"))), "the revocation queue has its handle");
    assert_eq!(store.claim_revocations(10, 60_000).await.unwrap().len(), 1);
}

async fn a_failing_write_fails_alone(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    // Two leases with one id: the second one's insert fails.
    let leases = [
        lease("first", "1", Some("jti:1"), far),
        lease("same-id", "2", Some("jti:2"), far),
        lease("same-id", "3", Some("jti:3"), far),
        lease("last", "4", Some("jti:4"), far),
    ];
    let outcomes = join_all(leases.iter().map(|lease| store.begin_leases(lease.clone()))).await;
    assert_eq!(
        store.group_commit_stats(),
        GroupCommitStats { batches: 0, batched_writes: 0, batches_failed: 1 },
        "the batch fails as a whole, then is committed write by write"
    );
    assert_eq!(outcomes[0].as_ref().unwrap(), &LeaseBegun::Begun);
    assert_eq!(outcomes[1].as_ref().unwrap(), &LeaseBegun::Begun);
    assert!(outcomes[2].is_err(), "the duplicate id fails, alone");
    assert_eq!(outcomes[3].as_ref().unwrap(), &LeaseBegun::Begun, "a failing neighbour does not fail a write");
    assert!(
        store.record_exchange("github", "jti:3", far).await.unwrap(),
        "the failed write left nothing behind: its token is unspent"
    );
    assert!(store.leases_of_job("github", "3").await.unwrap().is_empty());
    assert_eq!(store.leases_of_job("github", "4").await.unwrap().len(), 1);
}
