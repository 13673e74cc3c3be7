//! From judged jobs to runners and figures. Pure: the caller reads the store.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::store::{RunnerJob, RunnerLastSeen};

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
}

impl RunnerRow {
    pub fn self_hosted(&self) -> bool {
        self.environment.as_deref() == Some("self-hosted")
    }
}

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

/// The report of `jobs` (the judged jobs kept, oldest first) for those seen since `since`.
/// Staleness is judged on `last_seen` (every runner kept, whatever the window); `reused` are the
/// runners the store marked reused.
pub fn build(
    jobs: &[RunnerJob],
    last_seen: &[RunnerLastSeen],
    reused: &[(String, String)],
    since: i64,
    now: i64,
) -> FleetReport {
    let recent: Vec<&RunnerJob> = jobs.iter().filter(|job| job.seen_at >= since).collect();
    let stale = last_seen.iter().filter(|r| r.self_hosted && !r.single_use && now - r.last_seen > STALE_AFTER).count();
    let runners = runners(recent.iter().copied(), reused);

    let self_hosted: Vec<&&RunnerJob> =
        recent.iter().filter(|job| job.runner_environment.as_deref() == Some("self-hosted")).collect();
    let on_single_use = self_hosted.iter().filter(|job| job.single_use).count();
    let share = (!self_hosted.is_empty()).then(|| on_single_use as f64 / self_hosted.len() as f64);
    let identified = || runners.iter().filter(|r| r.key.is_some());
    let multi_repository = identified().filter(|r| r.self_hosted() && r.repositories > 1).count();
    let reused_count = identified().filter(|r| r.reused).count();

    let count = |value: usize| Some(value as f64);
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
            value: count(multi_repository),
            target: "0",
            met: zero(multi_repository),
        },
        Figure {
            name: "reused_single_use_runners",
            description: "runners that served more than one job on a single-use tier",
            value: count(reused_count),
            target: "0",
            met: zero(reused_count),
        },
        Figure {
            name: "stale_persistent_runners",
            description: "persistent (not single-use) self-hosted runners not seen for more than 30 days",
            value: count(stale),
            target: "0",
            met: zero(stale),
        },
    ];

    let mut tiers: BTreeMap<Option<String>, TierRow> = BTreeMap::new();
    let mut days: BTreeMap<(String, String), usize> = BTreeMap::new();
    for job in &recent {
        let row =
            tiers.entry(job.tier.clone()).or_insert_with(|| TierRow { tier: job.tier.clone(), ..TierRow::default() });
        row.jobs += 1;
        row.roles_granted += job.roles_granted;
        let tier = job.tier.clone().unwrap_or_else(|| "(none)".to_owned());
        *days.entry((day(job.seen_at), tier)).or_default() += 1;
    }
    FleetReport {
        summary: Summary {
            since,
            generated_at: now,
            jobs: recent.len(),
            self_hosted_jobs: self_hosted.len(),
            figures,
            tiers: tiers.into_values().collect(),
            days: days.into_iter().map(|((day, tier), jobs)| (day, tier, jobs)).collect(),
        },
        runners,
    }
}

/// Jobs grouped by runner: by key where known, else by name, else one row per issuer for the
/// jobs whose runner nobody told.
fn runners<'j>(jobs: impl Iterator<Item = &'j RunnerJob>, reused: &[(String, String)]) -> Vec<RunnerRow> {
    struct Seen {
        row: RunnerRow,
        repositories: BTreeSet<String>,
        single_use_jobs: BTreeSet<String>,
    }
    let mut seen: BTreeMap<(String, Option<String>, Option<String>), Seen> = BTreeMap::new();
    for job in jobs {
        let name_key = if job.runner_key.is_some() { None } else { job.runner_name.clone() };
        let entry = seen.entry((job.issuer.clone(), job.runner_key.clone(), name_key)).or_insert_with(|| Seen {
            row: RunnerRow {
                issuer: job.issuer.clone(),
                key: job.runner_key.clone(),
                name: None,
                group: None,
                environment: None,
                tier: None,
                single_use: false,
                reused: false,
                first_seen: job.seen_at,
                last_seen: job.seen_at,
                jobs: 0,
                repositories: 0,
            },
            repositories: BTreeSet::new(),
            single_use_jobs: BTreeSet::new(),
        });
        let row = &mut entry.row;
        row.jobs += 1;
        row.first_seen = row.first_seen.min(job.seen_at);
        if job.seen_at >= row.last_seen {
            row.last_seen = job.seen_at;
            row.tier = job.tier.clone();
            row.single_use = job.single_use;
        }
        row.name = row.name.take().or_else(|| job.runner_name.clone());
        row.group = row.group.take().or_else(|| job.runner_group.clone());
        row.environment = row.environment.take().or_else(|| job.runner_environment.clone());
        entry.repositories.insert(job.repository.clone());
        if job.single_use {
            entry.single_use_jobs.insert(job.job_id.clone());
        }
    }
    let mut rows: Vec<RunnerRow> = seen
        .into_values()
        .map(|mut entry| {
            let row = &mut entry.row;
            row.repositories = entry.repositories.len();
            let marked = row.key.as_ref().is_some_and(|key| reused.iter().any(|(i, k)| *i == row.issuer && k == key));
            row.reused = row.key.is_some() && (marked || entry.single_use_jobs.len() > 1);
            entry.row
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
