//! From the store's aggregates of judged jobs to runners and figures. Pure: the caller reads
//! the store.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::store::{FleetAggregates, RefusalCount, RunnerJobsSeen};

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
}

impl RunnerRow {
    pub fn self_hosted(&self) -> bool {
        self.environment.as_deref() == Some("self-hosted")
    }

    /// Whether it replayed a token or asked again for an ended job's credentials: what a
    /// persistent foothold on a runner looks like.
    pub fn suspicious(&self) -> bool {
        SUSPICIOUS.iter().any(|reason| self.refused.contains_key(*reason))
    }
}

/// The refusals that make a runner suspicious.
const SUSPICIOUS: [&str; 2] = ["replayed", "job_ended"];

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
    pub runners: Vec<RunnerRow>,
}

/// The report of the jobs seen since `since`, from the store's aggregates of them (see
/// [`Store::fleet_aggregates`](crate::store::Store::fleet_aggregates)): staleness is judged on
/// every runner kept, whatever the window; a runner is reused when the store marked it so or it
/// served more than one job on a single-use tier.
pub fn build(aggregates: &FleetAggregates, since: i64, now: i64) -> FleetReport {
    let totals = &aggregates.totals;
    let runners = runners(&aggregates.runners, &aggregates.refusals);
    let (self_hosted, on_single_use) = (count(totals.self_hosted), count(totals.self_hosted_single_use));
    let share = (self_hosted > 0).then(|| on_single_use as f64 / self_hosted as f64);
    let identified = || runners.iter().filter(|r| r.key.is_some());
    let multi_repository = identified().filter(|r| r.self_hosted() && r.repositories > 1).count();
    let reused_count = identified().filter(|r| r.reused).count();
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
            description: "runners with suspicious attempts (a replayed token, an ended job asking again)",
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
    FleetReport {
        summary: Summary {
            since,
            generated_at: now,
            jobs: count(totals.jobs),
            self_hosted_jobs: self_hosted,
            figures,
            tiers: tiers.into_values().collect(),
            days: days.into_iter().map(|((day, tier), jobs)| (day, tier, jobs)).collect(),
        },
        runners,
    }
}

/// A count from the store (never negative).
fn count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// One row per runner, the latest seen first, with the refusals counted against it.
fn runners(seen: &[RunnerJobsSeen], refusals: &[RefusalCount]) -> Vec<RunnerRow> {
    let mut refused: BTreeMap<(&str, &str), BTreeMap<String, i64>> = BTreeMap::new();
    for refusal in refusals {
        if let Some(key) = &refusal.runner_key {
            refused.entry((&refusal.issuer, key)).or_default().insert(refusal.reason.clone(), refusal.attempts);
        }
    }
    let mut seen: Vec<&RunnerJobsSeen> = seen.iter().collect();
    seen.sort_by(|a, b| (&a.issuer, &a.runner_key, &a.name_key).cmp(&(&b.issuer, &b.runner_key, &b.name_key)));
    let mut rows: Vec<RunnerRow> = seen
        .into_iter()
        .map(|runner| RunnerRow {
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
            refused: runner
                .runner_key
                .as_deref()
                .and_then(|key| refused.get(&(runner.issuer.as_str(), key)))
                .cloned()
                .unwrap_or_default(),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.last_seen.cmp(&a.last_seen).then_with(|| a.issuer.cmp(&b.issuer)).then_with(|| a.key.cmp(&b.key))
    });
    rows
}

/// `YYYY-MM-DD` (UTC) of a unix time.
pub(super) fn day(unix: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::OffsetDateTime::from_unix_timestamp(unix).ok().and_then(|t| t.format(&format).ok()).unwrap_or_default()
}
