//! The runner records' contract on every store: a single-use runner's first job is decided by
//! one statement whichever connection (replica) asks first, and the fleet's judged jobs add up.

use ci_creds::clock::now;
use ci_creds::store::{RunnerClaim, RunnerJob, Store};

use crate::support::store::{Subject, on_every_store, postgres, sqlite};

on_every_store!(a_runner_serves_its_first_job_and_is_reused_for_good, judged_jobs_add_up_and_expire);

async fn a_runner_serves_its_first_job_and_is_reused_for_good(subject: Subject) {
    let a = subject.store;
    let b = Store::connect(&subject.url).await.unwrap();
    let keep = now() + 3600;
    assert_eq!(a.claim_runner("github", "42/eph-42", "job-1", keep).await.unwrap(), RunnerClaim::FirstJob);
    assert_eq!(
        b.claim_runner("github", "42/eph-42", "job-1", keep).await.unwrap(),
        RunnerClaim::FirstJob,
        "its job again"
    );
    let reused = RunnerClaim::Reused { first_job_id: "job-1".into() };
    assert_eq!(b.claim_runner("github", "42/eph-42", "job-2", keep).await.unwrap(), reused, "another job");
    assert_eq!(a.claim_runner("github", "42/eph-42", "job-1", keep).await.unwrap(), reused, "reused for good");
    assert_eq!(
        a.claim_runner("gitlab", "42/eph-42", "job-2", keep).await.unwrap(),
        RunnerClaim::FirstJob,
        "per issuer"
    );
    assert_eq!(a.reused_runners().await.unwrap(), [("github".to_owned(), "42/eph-42".to_owned())]);

    // A record past its keep is claimed afresh, and the sweeper forgets it.
    assert_eq!(a.claim_runner("github", "7/old", "job-3", now() - 1).await.unwrap(), RunnerClaim::FirstJob);
    assert_eq!(a.claim_runner("github", "7/old", "job-4", keep).await.unwrap(), RunnerClaim::FirstJob);
    assert_eq!(a.claim_runner("github", "8/gone", "job-5", now() - 1).await.unwrap(), RunnerClaim::FirstJob);
    assert_eq!(a.prune_runners(now()).await.unwrap(), 1);
}

fn judged(job_id: &str, runner: &str, repository: &str, granted: i64, refused: bool) -> RunnerJob {
    RunnerJob {
        issuer: "github".into(),
        job_id: job_id.into(),
        repository: repository.into(),
        runner_key: Some(runner.into()),
        runner_name: Some(runner.into()),
        runner_environment: Some("self-hosted".into()),
        tier: Some("ephemeral".into()),
        single_use: true,
        roles_granted: granted,
        refused,
        seen_at: now(),
        ..RunnerJob::default()
    }
}

async fn judged_jobs_add_up_and_expire(subject: Subject) {
    let store = subject.store;
    let batch = [
        judged("1", "r1", "octo-org/app", 2, false),
        judged("1", "r1", "octo-org/app", 1, false),
        judged("2", "r1", "octo-org/infra", 0, true),
    ];
    store.record_runner_jobs(batch.to_vec(), 3600).await.unwrap();
    let jobs = store.runner_jobs_since(0).await.unwrap();
    assert_eq!(jobs.len(), 2, "one record per job: {jobs:?}");
    assert_eq!((jobs[0].job_id.as_str(), jobs[0].roles_granted, jobs[0].refused), ("1", 3, false));
    assert_eq!((jobs[1].job_id.as_str(), jobs[1].roles_granted, jobs[1].refused), ("2", 0, true));
    assert!(store.runner_jobs_since(now() + 10).await.unwrap().is_empty());
    let last_seen = store.runners_last_seen().await.unwrap();
    assert_eq!(last_seen.len(), 1, "one row per runner: {last_seen:?}");
    assert_eq!(
        (last_seen[0].runner_key.as_str(), last_seen[0].single_use, last_seen[0].self_hosted),
        ("r1", true, true)
    );
    store.record_runner_jobs(vec![judged("3", "r2", "octo-org/app", 1, false)], -10).await.unwrap();
    let many: Vec<RunnerJob> = (0..150).map(|n| judged(&format!("m{n}"), "r3", "octo-org/app", 1, false)).collect();
    store.record_runner_jobs(many, -10).await.unwrap();
    assert_eq!(store.runner_jobs_since(0).await.unwrap().len(), 153, "150 jobs over three statements");
    assert_eq!(store.prune_runners(now()).await.unwrap(), 151, "past their keep");
    assert_eq!(store.runner_jobs_since(0).await.unwrap().len(), 2);
}
