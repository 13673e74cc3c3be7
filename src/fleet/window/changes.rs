//! What a transaction changes in the fleet's window, gathered per row before it is written.

use std::collections::BTreeMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::runner_of;
use crate::fleet::judged_job::RunnerJob;
use crate::store::{Error, Query};

/// The columns [`counted_job`] reads, in its order.
pub(in crate::fleet) const COUNTED_COLUMNS: &str = "issuer, job_id, repository, runner_key, runner_name, \
     runner_group, runner_environment, tier, single_use, roles_granted, seen_at, refused";

/// A judged job as recorded, from a row whose first columns are [`COUNTED_COLUMNS`].
pub(in crate::fleet) fn counted_job(row: &AnyRow) -> Result<RunnerJob, Error> {
    Ok(RunnerJob {
        issuer: row.try_get(0)?,
        job_id: row.try_get(1)?,
        repository: row.try_get(2)?,
        runner_key: row.try_get(3)?,
        runner_name: row.try_get(4)?,
        runner_group: row.try_get(5)?,
        runner_environment: row.try_get(6)?,
        tier: row.try_get(7)?,
        single_use: row.try_get::<i64, _>(8)? != 0,
        roles_granted: row.try_get(9)?,
        seen_at: row.try_get(10)?,
        refused: row.try_get::<i64, _>(11)? != 0,
    })
}

impl RunnerJob {
    /// The group its runner is counted in.
    pub(in crate::fleet) fn runner(&self) -> String {
        runner_of(self.runner_key.as_deref(), self.runner_name.as_deref())
    }

    fn self_hosted(&self) -> bool {
        self.runner_environment.as_deref() == Some("self-hosted")
    }

    fn position(&self) -> Position {
        (self.seen_at, self.job_id.clone())
    }
}

/// Where a job stands in its runner's order: oldest first, then by job id.
pub(super) type Position = (i64, String);

/// A runner's window marks: its oldest and latest job (with the latest's tier and single-use
/// flag), and the first job that told its name, group and environment, with what it told.
#[derive(Clone, Debug, Default)]
pub(super) struct Marks {
    pub first: Option<Position>,
    pub latest: Option<(Position, Option<String>, bool)>,
    pub named: Option<(Position, String)>,
    pub grouped: Option<(Position, String)>,
    pub placed: Option<(Position, String)>,
}

impl Marks {
    /// The columns of `runner_windows` the marks are written to, in [`bind`](Self::bind)'s order.
    pub const COLUMNS: [&str; 15] = [
        "first_at",
        "first_job",
        "latest_at",
        "latest_job",
        "tier",
        "single_use",
        "runner_name",
        "named_at",
        "named_job",
        "runner_group",
        "grouped_at",
        "grouped_job",
        "runner_environment",
        "placed_at",
        "placed_job",
    ];

    /// Takes `job`'s place where it comes first (or last) of those offered.
    fn offer(&mut self, job: &RunnerJob) {
        let position = job.position();
        if self.first.as_ref().is_none_or(|first| position < *first) {
            self.first = Some(position.clone());
        }
        if self.latest.as_ref().is_none_or(|(latest, _, _)| position > *latest) {
            self.latest = Some((position.clone(), job.tier.clone(), job.single_use));
        }
        for (slot, told) in [
            (&mut self.named, &job.runner_name),
            (&mut self.grouped, &job.runner_group),
            (&mut self.placed, &job.runner_environment),
        ] {
            if let Some(told) = told
                && slot.as_ref().is_none_or(|(held, _)| position < *held)
            {
                *slot = Some((position.clone(), told.clone()));
            }
        }
    }

    /// Binds the marks to `query`, in the order of [`COLUMNS`](Self::COLUMNS).
    pub fn bind<'q>(&self, query: Query<'q>) -> Query<'q> {
        let at = |position: Option<&Position>| position.map(|(at, job)| (*at, job.clone())).unzip();
        let (first_at, first_job) = at(self.first.as_ref());
        let (latest_at, latest_job) = at(self.latest.as_ref().map(|(position, _, _)| position));
        let tier = self.latest.as_ref().and_then(|(_, tier, _)| tier.clone());
        let single_use = self.latest.as_ref().map(|(_, _, single_use)| i64::from(*single_use));
        let mut query =
            query.bind(first_at).bind(first_job).bind(latest_at).bind(latest_job).bind(tier).bind(single_use);
        for told in [&self.named, &self.grouped, &self.placed] {
            let (at, job) = at(told.as_ref().map(|(position, _)| position));
            query = query.bind(told.as_ref().map(|(_, value)| value.clone())).bind(at).bind(job);
        }
        query
    }
}

/// What changes in one runner's row: counts to add (negative to take), and candidates for its
/// marks.
#[derive(Debug, Default)]
pub(super) struct RunnerChange {
    pub jobs: i64,
    pub single_use_jobs: i64,
    pub marks: Marks,
    pub kept_jobs: i64,
    pub kept_single_use: i64,
    pub kept_self_hosted: i64,
    pub kept_last_seen: i64,
    /// A job it counted left: its marks are read again from its jobs.
    pub read_again: bool,
}

/// Everything one transaction changes in the maintained rows, gathered per row and written in
/// key order once (`apply.rs`).
#[derive(Debug, Default)]
pub(in crate::fleet) struct Changes {
    /// Held alone (a slide or a prune): rows left empty may be deleted without taking locks in
    /// an order another writer could take them in the other way round.
    pub(super) alone: bool,
    pub(super) runners: BTreeMap<(String, String), RunnerChange>,
    pub(super) repositories: BTreeMap<(String, String, String), i64>,
    pub(super) hours: BTreeMap<(i64, String, bool, bool), (i64, i64)>,
}

impl Changes {
    /// The changes of a transaction holding the window alone ([`Hold::Alone`](super::Hold)).
    pub fn alone() -> Self {
        Self { alone: true, ..Self::default() }
    }

    /// A job newly counted under its runner; in the window's rows too when `in_window`.
    pub fn add(&mut self, job: &RunnerJob, in_window: bool) {
        let runner = job.runner();
        let change = self.runners.entry((job.issuer.clone(), runner.clone())).or_default();
        change.kept_jobs += 1;
        change.kept_single_use += i64::from(job.single_use);
        change.kept_self_hosted += i64::from(job.self_hosted());
        change.kept_last_seen = change.kept_last_seen.max(job.seen_at);
        if in_window {
            change.jobs += 1;
            change.single_use_jobs += i64::from(job.single_use);
            change.marks.offer(job);
            *self.repositories.entry((job.issuer.clone(), runner, job.repository.clone())).or_default() += 1;
        }
    }

    /// A job no longer counted under `runner` (where it was counted): pruned, or told more of its
    /// runner. Kept counts fall; the window's too when `in_window`.
    pub fn remove(&mut self, job: &RunnerJob, runner: &str, in_window: bool) {
        let change = self.runners.entry((job.issuer.clone(), runner.to_owned())).or_default();
        change.kept_jobs -= 1;
        change.kept_single_use -= i64::from(job.single_use);
        change.kept_self_hosted -= i64::from(job.self_hosted());
        change.read_again = true;
        if in_window {
            self.leave(job, runner);
        }
    }

    /// A job leaving the window (still kept).
    pub fn leave(&mut self, job: &RunnerJob, runner: &str) {
        let change = self.runners.entry((job.issuer.clone(), runner.to_owned())).or_default();
        change.jobs -= 1;
        change.single_use_jobs -= i64::from(job.single_use);
        change.read_again = true;
        *self.repositories.entry((job.issuer.clone(), runner.to_owned(), job.repository.clone())).or_default() -= 1;
    }

    /// Jobs and roles granted to add to the job's hour.
    pub fn hour(&mut self, job: &RunnerJob, jobs: i64, roles_granted: i64) {
        let key =
            (job.seen_at.div_euclid(3600), job.tier.clone().unwrap_or_default(), job.self_hosted(), job.single_use);
        let counts = self.hours.entry(key).or_default();
        counts.0 += jobs;
        counts.1 += roles_granted;
    }
}
