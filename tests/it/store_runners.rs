//! The runner records' contract on every store: a single-use runner's first job is decided by
//! one statement whichever connection (replica) asks first, and the fleet's judged jobs add up.

use ci_creds::clock::now;
use std::time::{Duration, Instant};

use ci_creds::fleet;
use ci_creds::fleet::gauges as fleet_gauges;
use ci_creds::fleet::{DayJobs, JobTotals, RefusalCount, RunnerJob, RunnerRefusal, StoredFigures, TierJobs};
use ci_creds::store::{RunnerClaim, Store, StoreKind};

use crate::support::store::{Subject, on_every_store, postgres, sqlite};

on_every_store!(
    a_runner_serves_its_first_job_and_is_reused_for_good,
    judged_jobs_add_up_and_expire,
    the_fleet_is_aggregated_by_the_store,
    refusals_are_counted_per_runner_reason_and_day,
    fleet_figures_are_kept_for_every_broker_and_computed_by_one_at_a_time,
    the_metrics_figures_are_computed_once_an_interval_and_read_by_every_broker
);

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

/// The report's aggregates are one `GROUP BY` per figure on every store: totals, tiers, days,
/// one row per runner with its first name told and its latest tier, and the stale count.
async fn the_fleet_is_aggregated_by_the_store(subject: Subject) {
    let store = subject.store;
    let day = 86_400;
    let at = |mut job: RunnerJob, seen_at: i64| {
        job.seen_at = seen_at;
        job
    };
    let mut unnamed = judged("4", "r2", "octo-org/app", 1, false);
    unnamed.runner_name = None;
    let mut persistent = judged("5", "p1", "octo-org/app", 1, false);
    (persistent.tier, persistent.single_use) = (Some("persistent".into()), false);
    let mut untold = judged("6", "ignored", "octo-org/web", 0, true);
    (untold.runner_key, untold.runner_name, untold.runner_environment, untold.tier) = (None, None, None, None);
    let jobs = vec![
        at(judged("1", "r1", "octo-org/app", 2, false), 10 * day + 5),
        at(judged("2", "r1", "octo-org/infra", 1, false), 11 * day),
        at(unnamed, 11 * day),
        at(judged("3", "r2", "octo-org/app", 1, false), 11 * day + 1),
        at(persistent, day),
        at(untold, 12 * day),
    ];
    store.record_runner_jobs(jobs, 100 * 365 * day).await.unwrap();
    let aggregates = store.fleet_aggregates(10 * day, 5 * day).await.unwrap();
    assert_eq!(aggregates.totals, JobTotals { jobs: 5, self_hosted: 4, self_hosted_single_use: 4 }, "p1 is older");
    let mut tiers = aggregates.tiers.clone();
    tiers.sort_by(|a, b| a.tier.cmp(&b.tier));
    assert_eq!(
        tiers,
        [
            TierJobs { tier: None, jobs: 1, roles_granted: 0 },
            TierJobs { tier: Some("ephemeral".into()), jobs: 4, roles_granted: 5 }
        ]
    );
    let mut days = aggregates.days.clone();
    days.sort_by(|a, b| (a.day, &a.tier).cmp(&(b.day, &b.tier)));
    let ephemeral = Some("ephemeral".to_owned());
    assert_eq!(
        days,
        [
            DayJobs { day: 10, tier: ephemeral.clone(), jobs: 1 },
            DayJobs { day: 11, tier: ephemeral, jobs: 3 },
            DayJobs { day: 12, tier: None, jobs: 1 }
        ]
    );
    let runner = |key: Option<&str>| aggregates.runners.iter().find(|r| r.runner_key.as_deref() == key).unwrap();
    assert_eq!(aggregates.runners.len(), 3, "{:?}", aggregates.runners);
    let r1 = runner(Some("r1"));
    assert_eq!((r1.jobs, r1.repositories, r1.single_use_jobs, r1.first_seen), (2, 2, 2, 10 * day + 5));
    let r2 = runner(Some("r2"));
    assert_eq!(r2.runner_name.as_deref(), Some("r2"), "the first name told, though its first job told none");
    assert_eq!((r2.last_seen, r2.tier.as_deref(), r2.single_use), (11 * day + 1, Some("ephemeral"), true));
    assert_eq!(runner(None).jobs, 1);
    assert_eq!(aggregates.stale_persistent, 1, "p1, last seen before the cut-off");

    // The `/metrics` refresh tallies runners as they stream in: the same figures as the report.
    let now = 40 * day;
    let report = fleet::read(&store, 10 * day, now, &fleet::RunnerFilter::default()).await.unwrap();
    assert_eq!(fleet::summary(&store, 10 * day, now).await.unwrap(), report.summary);
    let figure = |name: &str| report.summary.figures.iter().find(|f| f.name == name).unwrap().value;
    assert_eq!(figure("reused_single_use_runners"), Some(2.0), "r1 and r2 each served two single-use jobs");
}

/// Every kind of refusal is counted against its runner (or against no runner when none is
/// known), one row a runner, reason and day however many attempts; the window is in days.
async fn refusals_are_counted_per_runner_reason_and_day(subject: Subject) {
    let store = subject.store;
    let day = 86_400;
    let refusal = |runner: Option<&str>, reason: &'static str, seen_at: i64| RunnerRefusal {
        issuer: "github".into(),
        runner_key: runner.map(str::to_owned),
        reason,
        seen_at,
    };
    let mut refusals =
        vec![refusal(Some("r1"), "replayed", 20 * day + 1), refusal(Some("r1"), "replayed", 20 * day + 2)];
    for reason in ["job_ended", "ci_unavailable", "runner_reused", "runner_unknown", "policy"] {
        refusals.push(refusal(Some("r2"), reason, 21 * day));
    }
    refusals.push(refusal(None, "runner_unknown", 21 * day));
    refusals.push(refusal(Some("r1"), "replayed", 5 * day));
    store.record_runner_refusals(&refusals, 100 * 365 * day).await.unwrap();
    store.record_runner_refusals(&refusals[..1], 100 * 365 * day).await.unwrap();
    let count = |runner: Option<&str>, reason: &str, attempts| RefusalCount {
        issuer: "github".into(),
        runner_key: runner.map(str::to_owned),
        reason: reason.into(),
        attempts,
    };
    let counted = store.runner_refusals_since(20 * day + 3600).await.unwrap();
    let mut expected = vec![count(None, "runner_unknown", 1), count(Some("r1"), "replayed", 3)];
    for reason in ["ci_unavailable", "job_ended", "policy", "runner_reused", "runner_unknown"] {
        expected.push(count(Some("r2"), reason, 1));
    }
    let mut counted_sorted = counted.clone();
    counted_sorted.sort_by(|a, b| (&a.runner_key, &a.reason).cmp(&(&b.runner_key, &b.reason)));
    assert_eq!(counted_sorted, expected, "the day of 20 * day + 3600 counts whole; day 5 does not");
    assert_eq!(store.runner_refusals_since(0).await.unwrap().iter().map(|c| c.attempts).sum::<i64>(), 10);
}

/// The fleet's figures are stored for every broker, a late writer never overwrites newer ones,
/// and one broker at a time computes them (PostgreSQL; SQLite has one broker).
async fn fleet_figures_are_kept_for_every_broker_and_computed_by_one_at_a_time(subject: Subject) {
    let a = subject.store;
    let b = Store::connect(&subject.url).await.unwrap();
    assert_eq!(a.fleet_figures("fleet").await.unwrap(), None);
    let stored = |at: i64, figures: &str| StoredFigures { computed_at_ms: at, took_ms: 40, figures: figures.into() };
    a.put_fleet_figures("fleet", &stored(2_000, "newer")).await.unwrap();
    b.put_fleet_figures("fleet", &stored(1_000, "older")).await.unwrap();
    assert_eq!(b.fleet_figures("fleet").await.unwrap(), Some(stored(2_000, "newer")), "the later kept");

    let computing = a.try_lock("fleet").await.unwrap();
    assert!(computing.is_some());
    let other = b.try_lock("fleet").await.unwrap();
    assert_eq!(other.is_none(), a.kind() == StoreKind::Postgres, "another broker does not wait for it");
    drop(other);
    computing.unwrap().release().await.unwrap();
    assert!(b.try_lock("fleet").await.unwrap().is_some(), "free once the first is done");
}

/// `/metrics`' figures: computed by one broker, read from the store by another while fresh,
/// computed again once they are not.
async fn the_metrics_figures_are_computed_once_an_interval_and_read_by_every_broker(subject: Subject) {
    let a = subject.store;
    let b = Store::connect(&subject.url).await.unwrap();
    a.record_runner_jobs(vec![judged("1", "r1", "octo-org/app", 1, false)], 3600).await.unwrap();
    let reused = |figures: &fleet_gauges::Figures| {
        figures.hygiene.iter().find(|(name, ..)| name == "reused_single_use_runners").map(|(_, value, _)| *value)
    };
    let hour = Duration::from_secs(3600);
    let first = fleet_gauges::figures(&a, hour).await.unwrap().expect("computed");
    assert_eq!(reused(&first), Some(Some(0.0)));

    a.record_runner_jobs(vec![judged("2", "r1", "octo-org/app", 1, false)], 3600).await.unwrap();
    let read = fleet_gauges::figures(&b, hour).await.unwrap().expect("read from the store");
    assert_eq!(read, first, "fresh for the interval: not computed again");

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let figures = fleet_gauges::figures(&b, Duration::from_millis(1)).await.unwrap().unwrap();
        if reused(&figures) == Some(Some(1.0)) {
            break;
        }
        assert!(Instant::now() < deadline, "never computed again: {figures:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
