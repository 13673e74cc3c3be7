//! The store's contract, run against every database it supports: the same tests on an SQLite
//! file and on a throw-away PostgreSQL cluster.

use std::sync::Arc;

use ci_creds::clock::{now, now_ms};
use ci_creds::store::{
    EndOutcome, JobCiFacts, JobState, LeaseBegun, LeaseState, NewLease, NewLeases, SpentToken, Store,
};

use crate::support::store::{Subject, handle, lease, on_every_store, postgres, sqlite};

on_every_store!(
    accepts_a_token_once_until_it_is_pruned_after_expiry,
    keeps_replay_records_across_reopening,
    moves_a_lease_from_pending_to_active_to_revoking_to_revoked,
    refuses_new_leases_for_an_ended_job_even_one_never_seen,
    keeps_the_handle_of_a_credential_minted_while_its_job_ended,
    applies_a_webhook_delivery_once,
    expires_and_prunes_what_has_run_out,
    two_workers_never_claim_the_same_task,
    confirms_many_revocations_in_one_write,
    spends_a_token_with_its_leases_and_refuses_its_replay,
    spends_a_token_under_its_legacy_id_too_and_refuses_one_spent_there,
    a_job_ending_during_exchanges_leaves_no_active_lease,
    hands_out_the_jobs_asked_longest_ago_once_and_never_an_ended_one,
    shares_one_ci_api_budget_between_replicas,
    finds_the_jobs_within_a_job_by_exact_prefix,
);

async fn accepts_a_token_once_until_it_is_pruned_after_expiry(subject: Subject) {
    let store = subject.store;
    assert!(store.record_exchange("github", "jti:a", 1_000).await.unwrap());
    assert!(!store.record_exchange("github", "jti:a", 1_000).await.unwrap(), "a replay");
    assert!(store.record_exchange("gitlab", "jti:a", 1_000).await.unwrap(), "another issuer's jti is another token");
    assert!(store.record_exchange("github", "jti:b", 5_000).await.unwrap());

    assert_eq!(store.prune_exchanged_tokens(2_000).await.unwrap(), 2);
    assert!(!store.record_exchange("github", "jti:b", 5_000).await.unwrap(), "not yet expired: still remembered");
}

async fn keeps_replay_records_across_reopening(subject: Subject) {
    assert!(subject.store.record_exchange("github", "jti:a", i64::MAX).await.unwrap());
    drop(subject.store);
    let reopened = Store::connect(&subject.url).await.unwrap();
    assert!(!reopened.record_exchange("github", "jti:a", i64::MAX).await.unwrap());
}

async fn moves_a_lease_from_pending_to_active_to_revoking_to_revoked(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    assert_eq!(store.begin_leases(lease("l1", "42", far)).await.unwrap(), LeaseBegun::Begun);
    let leases = store.leases_of_job("github", "42").await.unwrap();
    assert_eq!((leases.len(), leases[0].state, leases[0].handle.clone()), (1, LeaseState::Pending, None));

    assert_eq!(store.activate_lease("l1", &handle("acc"), far).await.unwrap(), LeaseState::Active);
    assert_eq!(store.end_job("github", "42", "self", None, far).await.unwrap(), EndOutcome::Ended { revoking: 1 });
    let claimed = store.claim_revocations(10, 60_000).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!((claimed[0].state, claimed[0].handle.clone()), (LeaseState::Revoking, Some(handle("acc"))));
    assert!(store.claim_revocations(10, 60_000).await.unwrap().is_empty(), "a claimed task is not claimed twice");

    store.retry_revocation("l1", "vault is down", 0).await.unwrap();
    let retried = store.claim_revocations(10, 60_000).await.unwrap();
    assert_eq!((retried.len(), retried[0].attempts, retried[0].last_error.as_deref()), (1, 1, Some("vault is down")));
    store.confirm_revocations(&["l1"]).await.unwrap();
    let leases = store.leases_of_job("github", "42").await.unwrap();
    assert_eq!((leases[0].state, leases[0].attempts, leases[0].last_error.clone()), (LeaseState::Revoked, 2, None));
}

async fn refuses_new_leases_for_an_ended_job_even_one_never_seen(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    assert_eq!(
        store.end_job("github", "7", "webhook:github", None, far).await.unwrap(),
        EndOutcome::Ended { revoking: 0 }
    );
    assert_eq!(store.begin_leases(lease("l1", "7", far)).await.unwrap(), LeaseBegun::JobEnded);
    assert_eq!(store.count_jobs(JobState::Ended).await.unwrap(), 1);
    assert_eq!(store.count_jobs(JobState::Active).await.unwrap(), 0);
    assert!(store.leases_of_job("github", "7").await.unwrap().is_empty());
}

async fn keeps_the_handle_of_a_credential_minted_while_its_job_ended(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    store.begin_leases(lease("l1", "42", far)).await.unwrap();
    store.end_job("github", "42", "self", None, far).await.unwrap();
    assert!(store.claim_revocations(10, 60_000).await.unwrap().is_empty(), "no handle yet: nothing to revoke");
    assert_eq!(store.activate_lease("l1", &handle("acc"), far).await.unwrap(), LeaseState::Revoking);
    assert_eq!(store.claim_revocations(10, 60_000).await.unwrap().len(), 1, "now the queue can revoke it");
}

async fn applies_a_webhook_delivery_once(subject: Subject) {
    let store = subject.store;
    let delivery = Some(("github", "delivery-1"));
    let far = now() + 3600;
    assert!(matches!(
        store.end_job("github", "42", "webhook:github", delivery, far).await.unwrap(),
        EndOutcome::Ended { .. }
    ));
    assert_eq!(store.end_job("github", "42", "webhook:github", delivery, far).await.unwrap(), EndOutcome::Duplicate);
    assert_eq!(
        store.end_job("github", "42", "self", None, far).await.unwrap(),
        EndOutcome::AlreadyEnded { revoking: 0 },
        "another source's end of an ended job"
    );
}

async fn expires_and_prunes_what_has_run_out(subject: Subject) {
    let store = subject.store;
    let now = now();
    store.begin_leases(lease("old", "1", now - 10)).await.unwrap();
    store.activate_lease("old", &handle("a"), now - 20).await.unwrap();
    // Planned to have run out, but its credential, minted later, lives on: the later expiry holds.
    store.begin_leases(lease("new", "2", now - 5)).await.unwrap();
    store.activate_lease("new", &handle("b"), now + 3600).await.unwrap();

    assert_eq!(store.expire_leases(now, 30).await.unwrap(), 1);
    let leases = |job: &'static str| {
        let store = store.clone();
        async move { store.leases_of_job("github", job).await.unwrap().into_iter().map(|l| (l.state, l.expires_at)) }
    };
    assert_eq!(
        leases("1").await.collect::<Vec<_>>(),
        [(LeaseState::Expired, now - 10)],
        "the earlier expiry does not replace the lease's"
    );
    assert_eq!(leases("2").await.collect::<Vec<_>>(), [(LeaseState::Active, now + 3600)]);

    assert_eq!(store.prune_leases(now + 1).await.unwrap(), 1, "the expired lease is forgotten after retention");
    assert_eq!(store.prune_jobs(now + 10_000, now).await.unwrap(), 1, "job 1 has no lease left and is past keep_until");
    assert_eq!(store.jobs(10).await.unwrap().len(), 1, "job 2 still holds a lease");
}

async fn two_workers_never_claim_the_same_task(subject: Subject) {
    let far = now() + 3600;
    for n in 0..40 {
        let (id, job) = (format!("l{n}"), format!("{n}"));
        subject.store.begin_leases(lease(&id, &job, far)).await.unwrap();
        subject.store.activate_lease(&id, &handle(&id), far).await.unwrap();
        subject.store.end_job("github", &job, "self", None, far).await.unwrap();
    }
    let other = Store::connect(&subject.url).await.unwrap();
    let claim = |store: Store| async move {
        let mut claimed = Vec::new();
        for _ in 0..10 {
            claimed.extend(store.claim_revocations(3, 60_000).await.unwrap().into_iter().map(|l| l.id));
        }
        claimed
    };
    let (a, b) = tokio::join!(tokio::spawn(claim(subject.store.clone())), tokio::spawn(claim(other)));
    let mut all: Vec<String> = a.unwrap().into_iter().chain(b.unwrap()).collect();
    let claimed = all.len();
    all.sort();
    all.dedup();
    assert_eq!((claimed, all.len()), (40, 40), "every task claimed exactly once");
}

async fn a_job_ending_during_exchanges_leaves_no_active_lease(subject: Subject) {
    let store = Arc::new(subject.store);
    let far = now() + 3600;
    let mut tasks = Vec::new();
    for n in 0..30 {
        let job = format!("{n}");
        let (minter, ender) = (store.clone(), store.clone());
        let job_for_end = job.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("lease-{job}");
            if minter.begin_leases(lease(&id, &job, far)).await.unwrap() == LeaseBegun::Begun {
                minter.activate_lease(&id, &handle(&id), far).await.unwrap();
            }
        }));
        tasks.push(tokio::spawn(async move {
            ender.end_job("github", &job_for_end, "webhook:github", None, far).await.unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    for n in 0..30 {
        for lease in store.leases_of_job("github", &n.to_string()).await.unwrap() {
            assert_eq!(lease.state, LeaseState::Revoking, "job {n}: a lease of an ended job is being revoked");
            assert!(lease.handle.is_some(), "job {n}: with the handle to revoke it");
        }
    }
}

/// Only PostgreSQL is shared by several processes; SQLite's lock is deliberately a no-op.
#[tokio::test(flavor = "multi_thread")]
async fn a_named_lock_on_postgres_has_one_holder_at_a_time_across_pools() {
    let subject = postgres().await;
    let other = Store::connect(&subject.url).await.unwrap();
    let held = subject.store.lock("aws-deny-lists").await.unwrap();
    let waiter = tokio::spawn(async move {
        let _lock = other.lock("aws-deny-lists").await.unwrap();
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "the second holder waits");
    let unrelated = subject.store.lock("another-name").await;
    assert!(unrelated.is_ok(), "other names are not blocked");
    drop(held);
    tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.expect("released on drop").unwrap();
}

async fn confirms_many_revocations_in_one_write(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    for (id, job) in [("l1", "1"), ("l2", "1"), ("l3", "1"), ("other", "2")] {
        store.begin_leases(lease(id, job, far)).await.unwrap();
        store.activate_lease(id, &handle(id), far).await.unwrap();
    }
    store.end_job("github", "1", "self", None, far).await.unwrap();
    assert_eq!(store.claim_revocations(10, 60_000).await.unwrap().len(), 3);

    store.confirm_revocations(&["l1", "l3", "other"]).await.unwrap();
    let state = |leases: &[ci_creds::store::Lease], id: &str| leases.iter().find(|l| l.id == id).map(|l| l.state);
    let job1 = store.leases_of_job("github", "1").await.unwrap();
    assert_eq!(state(&job1, "l1"), Some(LeaseState::Revoked));
    assert_eq!(state(&job1, "l2"), Some(LeaseState::Revoking), "not confirmed: still queued");
    assert_eq!(state(&job1, "l3"), Some(LeaseState::Revoked));
    let job2 = store.leases_of_job("github", "2").await.unwrap();
    assert_eq!(state(&job2, "other"), Some(LeaseState::Active), "a lease not being revoked is left alone");
}

async fn spends_a_token_with_its_leases_and_refuses_its_replay(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    let spends = Some(SpentToken { token_id: "jti:t1".into(), legacy_id: None, expires_at: far });
    let mut first = NewLeases { spends: spends.clone(), ..lease("l1", "42", far) };
    first.leases.push(NewLease { id: "l1-read".into(), role: "read".into(), ..first.leases[0].clone() });
    assert_eq!(store.begin_leases(first).await.unwrap(), LeaseBegun::Begun);
    assert!(!store.record_exchange("github", "jti:t1", far).await.unwrap(), "the token is spent");
    let written: Vec<(String, LeaseState)> =
        store.leases_of_job("github", "42").await.unwrap().into_iter().map(|l| (l.role, l.state)).collect();
    assert_eq!(written, [("deploy".into(), LeaseState::Pending), ("read".into(), LeaseState::Pending)]);

    let replay = NewLeases { spends, ..lease("l2", "43", far) };
    assert_eq!(store.begin_leases(replay).await.unwrap(), LeaseBegun::Replayed);
    assert!(store.leases_of_job("github", "43").await.unwrap().is_empty(), "a replay writes no lease");
    assert_eq!(store.count_jobs(JobState::Active).await.unwrap(), 1, "nor the replaying job");
}

/// A token without `jti`: spent under its signed part's id and, for the release before, under
/// its whole text's; a replay if either was spent.
async fn spends_a_token_under_its_legacy_id_too_and_refuses_one_spent_there(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    let spent = |id: &str, legacy: &str| {
        Some(SpentToken { token_id: id.into(), legacy_id: Some(legacy.into()), expires_at: far })
    };
    let first = NewLeases { spends: spent("signed-sha256:a", "sha256:a1"), ..lease("l1", "42", far) };
    assert_eq!(store.begin_leases(first).await.unwrap(), LeaseBegun::Begun);
    assert!(!store.record_exchange("github", "sha256:a1", far).await.unwrap(), "the legacy id is spent too");

    assert!(store.record_exchange("github", "sha256:b1", far).await.unwrap(), "spent before the upgrade");
    let upgraded = NewLeases { spends: spent("signed-sha256:b", "sha256:b1"), ..lease("l2", "43", far) };
    assert_eq!(store.begin_leases(upgraded).await.unwrap(), LeaseBegun::Replayed);
    assert!(store.leases_of_job("github", "43").await.unwrap().is_empty(), "a replay writes no lease");

    let malleated = NewLeases { spends: spent("signed-sha256:a", "sha256:a2"), ..lease("l3", "44", far) };
    assert_eq!(store.begin_leases(malleated).await.unwrap(), LeaseBegun::Replayed, "same signed part");
}

async fn hands_out_the_jobs_asked_longest_ago_once_and_never_an_ended_one(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    let base = now_ms() - 600_000;
    // Jobs 1..=4 last asked 4, 3, 2 and 1 minutes after `base` (all long enough ago); job 5
    // never asked; job 6 has no locator (its token gave none); job 7 ended by a webhook.
    for (n, asked) in [(1, 240_000), (2, 180_000), (3, 120_000), (4, 60_000), (5, 0), (6, 0), (7, 0)] {
        let locator = (n != 6).then(|| format!("{{\"ci\":\"github\",\"repository\":\"o/r\",\"job_id\":\"{n}\"}}"));
        let ci = JobCiFacts { locator, asked_at_ms: if asked == 0 { 0 } else { base + asked }, runner: None };
        let begun = store.begin_leases(NewLeases { ci, ..lease(&format!("l{n}"), &n.to_string(), far) }).await.unwrap();
        assert_eq!(begun, LeaseBegun::Begun);
    }
    store.end_job("github", "7", "webhook:github", None, far).await.unwrap();
    let claim = |limit| {
        let store = store.clone();
        async move {
            let claimed = store.claim_jobs_to_ask("github", now_ms() - 60_000, limit, 60_000).await.unwrap();
            let mut ids: Vec<String> = claimed.into_iter().map(|job| job.job_id).collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(claim(3).await, ["3", "4", "5"], "never asked first, then those asked longest ago");
    assert_eq!(claim(10).await, ["1", "2"], "claimed jobs are not handed out twice; ended and unlocatable ones never");

    store.record_asked("github", "5", now_ms(), Some(r#"{"id":"9","source":"ci_api"}"#)).await.unwrap();
    store.release_ask_claim("github", "1").await.unwrap();
    assert_eq!(claim(10).await, ["1"], "a released claim is due again; a job just asked is not");
    let jobs = store.jobs(10).await.unwrap();
    let runner = jobs.iter().find(|job| job.job_id == "5").and_then(|job| job.runner.clone());
    assert_eq!(runner, Some(serde_json::json!({"id": "9", "source": "ci_api"})));

    store.record_webhook_runner("github", "5", r#"{"id":"1","source":"webhook:github"}"#, far).await.unwrap();
    store.record_webhook_runner("github", "99", r#"{"id":"1","source":"webhook:github"}"#, far).await.unwrap();
    let jobs = store.jobs(10).await.unwrap();
    let runner_of = |id: &str| jobs.iter().find(|job| job.job_id == id).and_then(|job| job.runner.clone());
    assert_eq!(runner_of("5").unwrap()["source"], "ci_api", "the CI API's facts are kept over a webhook's");
    assert_eq!(runner_of("99").unwrap()["source"], "webhook:github", "a start event before any exchange is kept");
}

async fn shares_one_ci_api_budget_between_replicas(subject: Subject) {
    let a = subject.store;
    let b = Store::connect(&subject.url).await.unwrap();
    let granted = |taken: ci_creds::store::CallsTaken| taken.granted;
    assert_eq!(granted(a.take_ci_api_calls("github", 6, 0, 10).await.unwrap()), 6, "a full minute's budget");
    assert_eq!(granted(b.take_ci_api_calls("github", 10, 2, 10).await.unwrap()), 2, "what is left, less `keep`");
    assert_eq!(granted(a.take_ci_api_calls("github", 1, 2, 10).await.unwrap()), 0, "spent for both replicas");
    assert_eq!(granted(b.take_ci_api_calls("gitlab", 3, 0, 600).await.unwrap()), 3, "another issuer's own budget");
    b.give_back_ci_api_calls("github", 3, 10).await.unwrap();
    assert_eq!(
        granted(a.take_ci_api_calls("github", 10, 0, 10).await.unwrap()),
        5,
        "given back, not beyond the refill"
    );

    b.pause_ci_api("github", now_ms() + 60_000).await.unwrap();
    a.pause_ci_api("github", now_ms() + 1_000).await.unwrap();
    let taken = a.take_ci_api_calls("github", 1, 0, 10).await.unwrap();
    assert!(taken.granted == 0 && taken.paused_ms > 30_000, "the longer pause holds: {taken:?}");
}

async fn finds_the_jobs_within_a_job_by_exact_prefix(subject: Subject) {
    let store = subject.store;
    let far = now() + 3600;
    for job in ["4711", "4711/e87e/1", "4711/e87e/2", "47110/x/1", "4711x/1", "a%_b/1", "axxb/1", "ABC/1", "abc/1"] {
        store.end_job("azure", job, "self", None, far).await.unwrap();
    }
    store.end_job("other", "4711/f00d/1", "self", None, far).await.unwrap();
    assert_eq!(store.job_ids_within("azure", "4711").await.unwrap(), ["4711/e87e/1", "4711/e87e/2"]);
    // `%` and `_` are the job id's own characters, not patterns; case counts on every database.
    assert_eq!(store.job_ids_within("azure", "a%_b").await.unwrap(), ["a%_b/1"]);
    assert_eq!(store.job_ids_within("azure", "a__b").await.unwrap(), Vec::<String>::new());
    assert_eq!(store.job_ids_within("azure", "abc").await.unwrap(), ["abc/1"]);
    assert_eq!(store.job_ids_within("azure", "4711/e87e/1").await.unwrap(), Vec::<String>::new());
    assert!(store.job_ended("azure", "4711").await.unwrap());
    assert!(!store.job_ended("azure", "4712").await.unwrap());
}
