//! The fleet's maintained window counts what a pass over the judged jobs counts, on every store:
//! through jobs recorded, judged again and told more of their runner, recorded late, pruned,
//! and the window sliding forward in slices.

use ci_creds::clock::now;
use ci_creds::fleet;
use ci_creds::fleet::{FleetAggregates, RunnerJob, RunnerRefusal};
use ci_creds::store::Store;

use crate::support::postgres::Postgres;
use crate::support::store::{Subject, migrated_before, on_every_store, postgres, sqlite};

on_every_store!(
    the_maintained_window_counts_what_the_jobs_do,
    replicas_recording_the_same_jobs_at_once_count_each_once
);

#[tokio::test]
async fn an_upgrade_counts_the_jobs_already_kept_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    an_upgrade_counts_the_jobs_already_kept(&format!("sqlite://{}?mode=rwc", dir.path().join("store.db").display()))
        .await;
}

#[tokio::test]
async fn an_upgrade_counts_the_jobs_already_kept_on_postgres() {
    let postgres = Postgres::start().await;
    postgres.create_database("ci_creds").await;
    an_upgrade_counts_the_jobs_already_kept(&postgres.url("ci_creds")).await;
}

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

/// A small deterministic generator (xorshift): the same history on every store and every run.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }

    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[self.roll(of.len() as u64) as usize]
    }
}

/// A judged job of a history starting at `start`: a few issuers, keyed, named and untold
/// runners, repositories, tiers and environments, and many jobs to a second.
fn job(dice: &mut Dice, n: usize, start: i64, span: i64) -> RunnerJob {
    let issuer = dice.pick(&["github", "gitlab"]).to_owned();
    let runner = dice.roll(24);
    let (runner_key, runner_name) = match runner {
        0..=15 => (Some(format!("{runner}/runner-{runner}")), Some(format!("runner-{runner}"))),
        16..=17 => (Some(format!("{runner}/quiet")), None),
        18..=21 => (None, Some(format!("named-{runner}"))),
        _ => (None, None),
    };
    let tier = dice.pick(&["", "ephemeral", "persistent"]);
    RunnerJob {
        issuer,
        job_id: format!("job-{n:05}"),
        repository: format!("octo-org/repo-{}", dice.roll(7)),
        runner_key,
        runner_name,
        runner_group: (dice.roll(3) > 0).then(|| dice.pick(&["default", "gpu"]).to_owned()),
        runner_environment: match dice.roll(5) {
            0 => None,
            1 => Some("github-hosted".to_owned()),
            _ => Some("self-hosted".to_owned()),
        },
        tier: (!tier.is_empty()).then(|| tier.to_owned()),
        single_use: tier == "ephemeral",
        roles_granted: dice.roll(3) as i64,
        refused: dice.roll(6) == 0,
        // Whole ten minutes: many jobs share a second, and their order is settled by job id.
        seen_at: start + (dice.roll(span as u64) as i64) / 600 * 600,
    }
}

/// The same job judged again, telling more of its runner than it first did.
fn told_more(mut job: RunnerJob, dice: &mut Dice) -> RunnerJob {
    job.roles_granted = 1;
    if job.runner_key.is_none() && dice.roll(2) == 0 {
        job.runner_key = Some(format!("{}/late", dice.roll(3)));
    }
    if job.runner_name.is_none() {
        job.runner_name = Some(format!("late-{}", dice.roll(3)));
    }
    job.runner_group = Some("late".to_owned());
    job
}

/// The aggregates in an order of their own, so that two reads compare whatever order the
/// store answered in.
fn sorted(mut aggregates: FleetAggregates) -> FleetAggregates {
    aggregates.tiers.sort_by(|a, b| a.tier.cmp(&b.tier));
    aggregates.days.sort_by(|a, b| (a.day, &a.tier).cmp(&(b.day, &b.tier)));
    aggregates
        .runners
        .sort_by(|a, b| (&a.issuer, &a.runner_key, &a.name_key).cmp(&(&b.issuer, &b.runner_key, &b.name_key)));
    aggregates
}

async fn maintained(store: &Store, since: i64, stale_before: i64) -> FleetAggregates {
    let mut runners = Vec::new();
    let mut aggregates = store
        .fleet_window_aggregates_each(since, stale_before, &mut |runner| runners.push(runner))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("the maintained window serves a start of {since}"));
    aggregates.runners = runners;
    sorted(aggregates)
}

async fn from_jobs(store: &Store, since: i64, stale_before: i64) -> FleetAggregates {
    let mut runners = Vec::new();
    let mut aggregates =
        store.fleet_aggregates_from_jobs(since, stale_before, |runner| runners.push(runner)).await.unwrap();
    aggregates.runners = runners;
    sorted(aggregates)
}

async fn assert_same(store: &Store, since: i64, stale_before: i64, when: &str) {
    let kept = from_jobs(store, since, stale_before).await;
    assert!(kept.totals.jobs > 0 && kept.runners.len() > 10, "{when}: a window worth comparing: {:?}", kept.totals);
    let read = maintained(store, since, stale_before).await;
    assert_eq!(read.totals, kept.totals, "{when}: totals");
    assert_eq!(read.tiers, kept.tiers, "{when}: tiers");
    assert_eq!(read.days, kept.days, "{when}: days");
    assert_eq!(read.stale_persistent, kept.stale_persistent, "{when}: stale");
    for (read, kept) in read.runners.iter().zip(&kept.runners) {
        assert_eq!(read, kept, "{when}: a runner");
    }
    assert_eq!(read.runners.len(), kept.runners.len(), "{when}: runners");
    // The figures alone, with the runners that miss a target counted by the store.
    let now = stale_before + fleet::STALE_AFTER;
    let mut counted = fleet::summary(store, since, now).await.unwrap();
    let mut judged = fleet::build(&kept, since, now).summary;
    counted.generated_at = judged.generated_at;
    assert_eq!(counted.figures, judged.figures, "{when}: figures");
    (counted.figures, judged.figures) = (Vec::new(), Vec::new());
    assert_eq!(counted, judged, "{when}: summary");
    // The worst runners a limit shows, found by the store, are those filtering the whole shows.
    let whole = fleet::read(store, since, now, &fleet::RunnerFilter::default()).await.unwrap();
    for filter in [
        fleet::RunnerFilter { limit: Some(7), ..Default::default() },
        fleet::RunnerFilter { missing_target: true, limit: Some(30), ..Default::default() },
        fleet::RunnerFilter { issuer: Some("gitlab".into()), self_hosted: true, limit: Some(12), ..Default::default() },
        fleet::RunnerFilter { tier: Some("persistent".into()), limit: Some(1_000), ..Default::default() },
        fleet::RunnerFilter { limit: Some(0), ..Default::default() },
    ] {
        let mut expected = whole.clone();
        expected.filter(&filter);
        let mut shown = fleet::read(store, since, now, &filter).await.unwrap();
        shown.summary.generated_at = expected.summary.generated_at;
        assert_eq!(shown, expected, "{when}: {filter:?}");
    }
}

/// A store written by the release before the maintained window: its jobs are counted by the
/// migration that adds it.
async fn an_upgrade_counts_the_jobs_already_kept(url: &str) {
    use sqlx::Connection;
    let mut connection = migrated_before(url, 8).await;
    let (mut dice, start) = (Dice(0x01d_5707e), now() - 90 * DAY);
    for job in (0..800).map(|n| job(&mut dice, n, start, 40 * DAY)) {
        sqlx::query(
            "INSERT INTO runner_jobs (issuer, job_id, repository, runner_key, runner_name, runner_group,
                 runner_environment, tier, single_use, roles_granted, refused, seen_at, keep_until)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(job.issuer)
        .bind(job.job_id)
        .bind(job.repository)
        .bind(job.runner_key)
        .bind(job.runner_name)
        .bind(job.runner_group)
        .bind(job.runner_environment)
        .bind(job.tier)
        .bind(i64::from(job.single_use))
        .bind(job.roles_granted)
        .bind(i64::from(job.refused))
        .bind(job.seen_at)
        .bind(job.seen_at + 400 * DAY)
        .execute(&mut connection)
        .await
        .unwrap();
    }
    connection.close().await.unwrap();

    let store = Store::connect(url).await.expect("migrates");
    let stale_before = start + 20 * DAY;
    assert_same(&store, start, stale_before, "every job kept before").await;
    assert_same(&store, start + 15 * DAY + 1, stale_before, "slid").await;
}

async fn the_maintained_window_counts_what_the_jobs_do(subject: Subject) {
    let store = subject.store;
    let mut dice = Dice(0x5eed_f1ee7);
    // Far enough back that the window may slide over all of it (never past 30 days before now).
    let start = now() - 120 * DAY;
    let span = 40 * DAY;
    let keep = 400 * DAY;

    // Runners marked reused by their single-use claims count as reused.
    for (runner, job_id) in [("3/runner-3", "claim-1"), ("3/runner-3", "claim-2"), ("5/runner-5", "claim-3")] {
        store.claim_runner("github", runner, job_id, now() + keep).await.unwrap();
    }
    // Replays and ended jobs asking again make runners suspicious.
    let refusals: Vec<RunnerRefusal> = ["3/runner-3", "9/runner-9", "16/quiet"]
        .into_iter()
        .zip(["replayed", "job_ended", "policy"])
        .map(|(runner, reason)| RunnerRefusal {
            issuer: "github".into(),
            runner_key: Some(runner.into()),
            reason,
            seen_at: start + 35 * DAY,
        })
        .collect();
    store.record_runner_refusals(&refusals, keep).await.unwrap();
    let history: Vec<RunnerJob> = (0..6_000).map(|n| job(&mut dice, n, start, span)).collect();
    let (first, second) = history.split_at(3_500);
    store.record_runner_jobs(first.to_vec(), keep).await.unwrap();
    // Some judged again in the next batch, telling more of their runner; some just again.
    let mut again: Vec<RunnerJob> = first.iter().step_by(7).map(|job| told_more(job.clone(), &mut dice)).collect();
    again.extend(first.iter().step_by(11).cloned());
    again.extend(second.iter().cloned());
    store.record_runner_jobs(again, keep).await.unwrap();
    let stale_before = start + 20 * DAY;
    assert_same(&store, start, stale_before, "every job in the window").await;

    // The window slides past the first ten days and a quarter hour: more than one slice of jobs.
    let since = start + 10 * DAY + 900;
    assert_same(&store, since, stale_before, "slid ten days").await;

    // Jobs recorded late (before the window), and jobs in it told more of their runner.
    let late: Vec<RunnerJob> = (6_000..6_200).map(|n| job(&mut dice, n, start, 12 * DAY)).collect();
    let told: Vec<RunnerJob> = second.iter().step_by(5).map(|job| told_more(job.clone(), &mut dice)).collect();
    store.record_runner_jobs(late, keep).await.unwrap();
    store.record_runner_jobs(told, keep).await.unwrap();
    assert_same(&store, since, stale_before, "late jobs and runners told").await;

    // Jobs kept a short while, pruned: inside the window and outside it.
    let short: Vec<RunnerJob> = (6_200..6_500).map(|n| job(&mut dice, n, start, span)).collect();
    store.record_runner_jobs(short, 1).await.unwrap();
    assert_same(&store, since, stale_before, "short-kept jobs counted").await;
    assert_eq!(store.prune_runners(start + span + 10).await.unwrap(), 300, "the short-kept jobs");
    assert_same(&store, since, stale_before, "short-kept jobs pruned").await;

    // Slid on in small steps, one of them within an hour, then most of the way.
    for step in [HOUR / 2, 7 * HOUR, DAY, 15 * DAY] {
        let since = since + step;
        assert_same(&store, since, stale_before + step, "slid on").await;
    }

    // A start before the maintained window is not served by it.
    let behind = store.fleet_window_aggregates_each(start, stale_before, &mut |_| {}).await.unwrap();
    assert!(behind.is_none(), "the window never moves back");
}

/// Two replicas record the same jobs at once, in opposite orders, one of them telling more of
/// some runners: each job is counted once, under the runner it ends up with, and neither waits on
/// the other for good.
async fn replicas_recording_the_same_jobs_at_once_count_each_once(subject: Subject) {
    let (a, b) = (subject.store, Store::connect(&subject.url).await.unwrap());
    let mut dice = Dice(0xc0ffee);
    let start = now() - 60 * DAY;
    let jobs: Vec<RunnerJob> = (0..3_000).map(|n| job(&mut dice, n, start, 20 * DAY)).collect();
    let mut told: Vec<RunnerJob> = jobs.iter().map(|job| told_more(job.clone(), &mut dice)).collect();
    told.reverse();
    let keep = 400 * DAY;
    let record = |store: Store, jobs: Vec<RunnerJob>| async move {
        for batch in jobs.chunks(300) {
            store.record_runner_jobs(batch.to_vec(), keep).await.unwrap();
        }
    };
    tokio::join!(record(a.clone(), jobs), record(b, told));
    assert_same(&a, start, start + 10 * DAY, "recorded by two replicas").await;
}
