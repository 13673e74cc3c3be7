//! From the store's aggregates of judged jobs to runners and figures. Pure: the caller reads
//! the store.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::aggregates::{FleetAggregates, RunnerJobsSeen};
use super::refusals::RefusalCount;
use super::window::RunnerCounts;

/// Seconds in a day, the chart's unit.
pub const DAY: i64 = 24 * 3600;
/// A persistent self-hosted runner not seen for this long is stale.
pub const STALE_AFTER: i64 = 30 * DAY;
/// The share of self-hosted jobs that should run on single-use tiers.
const SINGLE_USE_TARGET: f64 = 0.9;

/// One runner, by issuer and key (its name, or nothing, where no key is known).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunnerRow {
    pub issuer: String,
    /// GitHub `runner_id/runner_name`, Buildkite agent id, GitLab runner manager; `None` for
    /// jobs whose runner could not be told.
    pub key: Option<String>,
    pub name: Option<String>,
    /// Group (GitHub, Buildkite cluster) or queue.
    pub group: Option<String>,
    pub environment: Option<String>,
    /// The tier of its latest job.
    pub tier: Option<String>,
    pub single_use: bool,
    pub reused: bool,
    /// Unix seconds.
    pub first_seen: i64,
    pub last_seen: i64,
    pub jobs: usize,
    pub repositories: usize,
    /// Refused attempts against it in the window, by reason (`replayed`, `job_ended`, …).
    pub refused: BTreeMap<String, i64>,
    /// The targets it misses: `reused`, `multi_repository`, `stale`, `suspicious`.
    pub missed: Vec<&'static str>,
}

impl RunnerRow {
    pub fn self_hosted(&self) -> bool {
        self.environment.as_deref() == Some("self-hosted")
    }

    /// Whether it replayed a token, asked again for an ended job's credentials, or asked for a
    /// role more often than one job may: what a persistent foothold on a runner, or a stolen
    /// ID-token request, looks like.
    pub fn suspicious(&self) -> bool {
        SUSPICIOUS.iter().any(|reason| self.refused.contains_key(*reason))
    }
}

/// The refusals that make a runner suspicious.
const SUSPICIOUS: [&str; 3] = ["replayed", "job_ended", "exchange_cap"];

/// One hygiene figure, its target, and whether it is met (`None` when there is nothing to judge).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    pub name: &'static str,
    pub description: &'static str,
    pub value: Option<f64>,
    pub target: &'static str,
    pub met: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TierRow {
    /// `None`: jobs in no tier.
    pub tier: Option<String>,
    pub jobs: usize,
    pub roles_granted: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Unix seconds: jobs seen since then count.
    pub since: i64,
    pub generated_at: i64,
    pub jobs: usize,
    pub self_hosted_jobs: usize,
    pub figures: Vec<Figure>,
    pub tiers: Vec<TierRow>,
    /// Jobs per tier per day: (day as `YYYY-MM-DD`, tier or `(none)`, jobs).
    pub days: Vec<(String, String, usize)>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FleetReport {
    pub summary: Summary,
    /// The worst first: most targets missed, then the latest seen.
    pub runners: Vec<RunnerRow>,
    /// Runners left out by a filter or a limit.
    pub runners_not_shown: usize,
}

/// The runners a listing shows without `--limit` or `--all`: the worst, however large the fleet.
pub const SHOWN_RUNNERS: usize = 500;

/// Which runners a listing shows, and how many: the figures stay the whole fleet's.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunnerFilter {
    /// Only runners of this issuer.
    #[arg(long)]
    pub issuer: Option<String>,
    /// Only runners whose latest job ran in this tier.
    #[arg(long)]
    pub tier: Option<String>,
    /// Only self-hosted runners.
    #[arg(long)]
    pub self_hosted: bool,
    /// Only runners that miss a target (reused, shared across repositories, stale, suspicious).
    #[arg(long)]
    pub missing_target: bool,
    /// At most this many runners, the worst first; the rest are counted [default: 500].
    #[arg(long, conflicts_with = "all")]
    pub limit: Option<usize>,
    /// Every runner the filters keep, however many, instead of the worst 500.
    #[arg(long)]
    pub all: bool,
}

impl FleetReport {
    /// Keeps the runners `filter` asks for, the worst first, and counts the others.
    pub fn filter(&mut self, filter: &RunnerFilter) {
        let mut shown = Shown::new(filter);
        std::mem::take(&mut self.runners).into_iter().for_each(|runner| shown.offer(runner));
        let not_shown;
        (self.runners, not_shown) = shown.finish();
        self.runners_not_shown += not_shown;
    }
}

impl RunnerFilter {
    /// As the command line means it: without `--limit` or `--all`, the worst `SHOWN_RUNNERS`.
    pub fn bounded(mut self) -> Self {
        if !self.all {
            self.limit = self.limit.or(Some(SHOWN_RUNNERS));
        }
        self
    }

    fn keeps(&self, runner: &RunnerRow) -> bool {
        self.issuer.as_ref().is_none_or(|issuer| *issuer == runner.issuer)
            && self.tier.as_ref().is_none_or(|tier| runner.tier.as_ref() == Some(tier))
            && (!self.self_hosted || runner.self_hosted())
            && (!self.missing_target || !runner.missed.is_empty())
    }
}

/// The runners a filter keeps, offered one at a time as they stream from the store: with a limit,
/// no more than twice it (or 1,024) are held at once, the worst, so a listing of the worst ten
/// holds a bounded number of rows however large the fleet; the others are counted.
pub struct Shown<'f> {
    filter: &'f RunnerFilter,
    runners: Vec<RunnerRow>,
    not_shown: usize,
}

impl<'f> Shown<'f> {
    pub fn new(filter: &'f RunnerFilter) -> Self {
        Self { filter, runners: Vec::new(), not_shown: 0 }
    }

    pub fn offer(&mut self, runner: RunnerRow) {
        if !self.filter.keeps(&runner) {
            self.not_shown += 1;
            return;
        }
        self.runners.push(runner);
        // Cut back to the limit now and then, not at every row: sorting is paid once per limit.
        if let Some(limit) = self.filter.limit
            && self.runners.len() >= limit.saturating_mul(2).max(1024)
        {
            self.cut_to(limit);
        }
    }

    /// The runners kept, the worst first, and how many were left out.
    pub fn finish(mut self) -> (Vec<RunnerRow>, usize) {
        self.cut_to(self.filter.limit.unwrap_or(usize::MAX));
        (self.runners, self.not_shown)
    }

    fn cut_to(&mut self, limit: usize) {
        self.runners.sort_by(worst_first);
        self.not_shown += self.runners.len().saturating_sub(limit);
        self.runners.truncate(limit);
    }
}

/// Most targets missed first, then the latest seen; issuer, key and name settle ties, so the
/// order does not depend on the order rows arrive in.
fn worst_first(a: &RunnerRow, b: &RunnerRow) -> Ordering {
    b.missed
        .len()
        .cmp(&a.missed.len())
        .then_with(|| b.last_seen.cmp(&a.last_seen))
        .then_with(|| a.issuer.cmp(&b.issuer))
        .then_with(|| a.key.cmp(&b.key))
        .then_with(|| a.name.cmp(&b.name))
}

/// The report of the jobs seen since `since`, from the store's aggregates of them (see
/// [`Store::fleet_aggregates`](crate::store::Store::fleet_aggregates)): staleness is judged on
/// every runner kept, whatever the window; a runner is reused when the store marked it so or it
/// served more than one job on a single-use tier.
pub fn build(aggregates: &FleetAggregates, since: i64, now: i64) -> FleetReport {
    let mut tally = RunnerTally::default();
    aggregates.runners.iter().for_each(|runner| tally.add(runner));
    FleetReport {
        summary: summarize(aggregates, &tally, since, now),
        runners: runners(&aggregates.runners, &aggregates.refusals, now),
        runners_not_shown: 0,
    }
}

/// What the figures count of the runners, tallied one runner at a time, so the runners need
/// not all be held to judge them.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunnerTally {
    multi_repository: usize,
    reused: usize,
}

impl RunnerTally {
    /// The tally the store counted (from the maintained window), as [`add`](Self::add) would
    /// have made it runner by runner.
    pub fn counted(counts: RunnerCounts) -> Self {
        Self { multi_repository: count(counts.multi_repository), reused: count(counts.reused) }
    }

    /// Counts `runner` where an identified runner misses a target (as [`missed`] judges it).
    pub fn add(&mut self, runner: &RunnerJobsSeen) {
        if runner.runner_key.is_none() {
            return;
        }
        let self_hosted = runner.runner_environment.as_deref() == Some("self-hosted");
        self.multi_repository += usize::from(self_hosted && runner.repositories > 1);
        self.reused += usize::from(runner.marked_reused || runner.single_use_jobs > 1);
    }
}

/// The figures, tiers and days of the jobs seen since `since`, the runners judged by `tally`.
pub fn summarize(aggregates: &FleetAggregates, tally: &RunnerTally, since: i64, now: i64) -> Summary {
    let totals = &aggregates.totals;
    let (self_hosted, on_single_use) = (count(totals.self_hosted), count(totals.self_hosted_single_use));
    let share = (self_hosted > 0).then(|| on_single_use as f64 / self_hosted as f64);
    let (multi_repository, reused_count) = (tally.multi_repository, tally.reused);
    let stale = count(aggregates.stale_persistent);
    let suspicious: BTreeSet<(&str, &str)> = aggregates
        .refusals
        .iter()
        .filter(|r| SUSPICIOUS.contains(&r.reason.as_str()))
        .filter_map(|r| Some((r.issuer.as_str(), r.runner_key.as_deref()?)))
        .collect();
    let suspicious = suspicious.len();

    let value = |value: usize| Some(value as f64);
    let zero = |value: usize| Some(value == 0);
    let figures = vec![
        Figure {
            name: "single_use_share",
            description: "share of self-hosted jobs that ran on single-use tiers",
            value: share,
            target: "above 90 %",
            met: share.map(|s| s > SINGLE_USE_TARGET),
        },
        Figure {
            name: "multi_repository_runners",
            description: "self-hosted runners that served more than one repository",
            value: value(multi_repository),
            target: "0",
            met: zero(multi_repository),
        },
        Figure {
            name: "reused_single_use_runners",
            description: "runners that served more than one job on a single-use tier",
            value: value(reused_count),
            target: "0",
            met: zero(reused_count),
        },
        Figure {
            name: "stale_persistent_runners",
            description: "persistent (not single-use) self-hosted runners not seen for more than 30 days",
            value: value(stale),
            target: "0",
            met: zero(stale),
        },
        Figure {
            name: "suspicious_attempt_runners",
            description: "runners with suspicious attempts (a replayed token, an ended job asking again, a job past its exchange cap)",
            value: value(suspicious),
            target: "0",
            met: zero(suspicious),
        },
    ];

    let mut tiers: BTreeMap<Option<String>, TierRow> = BTreeMap::new();
    for seen in &aggregates.tiers {
        let row =
            tiers.entry(seen.tier.clone()).or_insert_with(|| TierRow { tier: seen.tier.clone(), ..TierRow::default() });
        row.jobs += count(seen.jobs);
        row.roles_granted += seen.roles_granted;
    }
    let mut days: BTreeMap<(String, String), usize> = BTreeMap::new();
    for seen in &aggregates.days {
        let tier = seen.tier.clone().unwrap_or_else(|| "(none)".to_owned());
        *days.entry((day(seen.day * DAY), tier)).or_default() += count(seen.jobs);
    }
    Summary {
        since,
        generated_at: now,
        jobs: count(totals.jobs),
        self_hosted_jobs: self_hosted,
        figures,
        tiers: tiers.into_values().collect(),
        days: days.into_iter().map(|((day, tier), jobs)| (day, tier, jobs)).collect(),
    }
}

/// A count from the store (never negative).
fn count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// One row per runner, the worst first, with the refusals counted against it and the targets it
/// misses.
fn runners(seen: &[RunnerJobsSeen], refusals: &[RefusalCount], now: i64) -> Vec<RunnerRow> {
    let refusals = Refusals::of(refusals);
    let every = RunnerFilter::default();
    let mut shown = Shown::new(&every);
    seen.iter().for_each(|runner| shown.offer(runner_row(runner, &refusals, now)));
    shown.finish().0
}

/// The refused attempts counted against each identified runner, by reason.
#[derive(Debug, Default)]
pub struct Refusals(BTreeMap<(String, String), BTreeMap<String, i64>>);

impl Refusals {
    pub fn of(refusals: &[RefusalCount]) -> Self {
        let mut by_runner = BTreeMap::<_, BTreeMap<String, i64>>::new();
        for refusal in refusals {
            if let Some(key) = &refusal.runner_key {
                by_runner
                    .entry((refusal.issuer.clone(), key.clone()))
                    .or_default()
                    .insert(refusal.reason.clone(), refusal.attempts);
            }
        }
        Self(by_runner)
    }

    fn of_runner(&self, issuer: &str, key: &str) -> BTreeMap<String, i64> {
        self.0.get(&(issuer.to_owned(), key.to_owned())).cloned().unwrap_or_default()
    }
}

/// A runner's row, with the refusals against it and the targets it misses as of `now`.
pub fn runner_row(runner: &RunnerJobsSeen, refusals: &Refusals, now: i64) -> RunnerRow {
    let mut row = RunnerRow {
        issuer: runner.issuer.clone(),
        key: runner.runner_key.clone(),
        name: runner.runner_name.clone(),
        group: runner.runner_group.clone(),
        environment: runner.runner_environment.clone(),
        tier: runner.tier.clone(),
        single_use: runner.single_use,
        reused: runner.runner_key.is_some() && (runner.marked_reused || runner.single_use_jobs > 1),
        first_seen: runner.first_seen,
        last_seen: runner.last_seen,
        jobs: count(runner.jobs),
        repositories: count(runner.repositories),
        refused: runner.runner_key.as_deref().map(|key| refusals.of_runner(&runner.issuer, key)).unwrap_or_default(),
        missed: Vec::new(),
    };
    row.missed = missed(&row, now);
    row
}

/// The targets an identified runner misses, as the figures judge them (staleness on its latest
/// job in the window).
fn missed(row: &RunnerRow, now: i64) -> Vec<&'static str> {
    if row.key.is_none() {
        return Vec::new();
    }
    let persistent = row.self_hosted() && !row.single_use;
    [
        ("reused", row.reused),
        ("multi_repository", row.self_hosted() && row.repositories > 1),
        ("stale", persistent && now - row.last_seen > STALE_AFTER),
        ("suspicious", row.suspicious()),
    ]
    .into_iter()
    .filter_map(|(target, missed)| missed.then_some(target))
    .collect()
}

/// `YYYY-MM-DD` (UTC) of a unix time.
pub(super) fn day(unix: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::OffsetDateTime::from_unix_timestamp(unix).ok().and_then(|t| t.format(&format).ok()).unwrap_or_default()
}
