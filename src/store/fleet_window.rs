//! The fleet report's window, kept up to date in the transaction of every write to `runner_jobs`
//! (migration 0008): a row per runner with its window's counts, a row per runner and repository,
//! and jobs per hour. A judged job recorded adds to its runner's row; a job pruned, or told more
//! of its runner by a later judgement, takes from it; the window slides forward a slice of
//! leaving jobs at a time. Where a job leaving may have been the one a runner's oldest job, first
//! name, group or environment was read from, that runner's fields are read again from its own
//! jobs, by index, a row each.
//!
//! On PostgreSQL every writer shares a lock on the window's row and a slide or a prune takes it
//! alone, so a job is never both counted by a writer and taken away by a slide that did not see
//! it. Rows are written in key order, so concurrent writers do not deadlock.

use std::collections::BTreeMap;

use futures_util::TryStreamExt;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::{Error, StoreKind};

/// The window the maintained rows serve: `runners report`'s default and the `/metrics` figures.
pub const FLEET_WINDOW: i64 = 30 * 24 * 3600;
/// Jobs taken from the window per transaction of a slide: the writer is held for one slice.
const SLIDE_SLICE: i64 = 1_000;
/// Parameters per statement at most, well under SQLite's limit (32,766) and PostgreSQL's (65,535).
const PARAMETERS_PER_STATEMENT: usize = 8_192;

/// Rows of `columns` parameters each per multi-row statement.
pub(super) fn rows_per_statement(columns: usize) -> usize {
    (PARAMETERS_PER_STATEMENT / columns).max(1)
}

/// The `VALUES` of `rows` rows of `columns` parameters each. On SQLite they are anonymous (`?`):
/// sqlx binds a numbered one (`$n`) by its name, which SQLite finds by walking the statement's list
/// of names, so binding numbered parameters costs the square of their number.
pub(super) fn placeholders(kind: StoreKind, rows: usize, columns: usize) -> String {
    let row = |first: usize| -> String {
        let params: Vec<String> = match kind {
            StoreKind::Sqlite => vec!["?".to_owned(); columns],
            StoreKind::Postgres => (first..first + columns).map(|n| format!("${n}")).collect(),
        };
        format!("({})", params.join(", "))
    };
    (0..rows).map(|at| row(at * columns + 1)).collect::<Vec<_>>().join(", ")
}

/// How a transaction holds the window's row on PostgreSQL (SQLite has one writer).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// A reader: no lock; its transaction's snapshot is enough.
    Read,
    /// Writers: any number at once.
    Shared,
    /// A slide or a prune: alone.
    Alone,
}

/// The window's `since`, held as `hold` until the transaction ends.
pub(super) async fn since(connection: &mut AnyConnection, kind: StoreKind, hold: Hold) -> Result<i64, Error> {
    let lock = match (kind, hold) {
        (StoreKind::Sqlite, _) | (_, Hold::Read) => "",
        (StoreKind::Postgres, Hold::Shared) => " FOR SHARE",
        (StoreKind::Postgres, Hold::Alone) => " FOR UPDATE",
    };
    let row = sqlx::query(&format!("SELECT since FROM fleet_window WHERE id = 1{lock}")).fetch_one(connection).await?;
    Ok(row.try_get(0)?)
}

/// The group a job's runner is counted in, as the report groups runners: by key where one is
/// known, else by name, else with the issuer's other untold jobs.
pub(super) fn runner_of(key: Option<&str>, name: Option<&str>) -> String {
    match (key, name) {
        (Some(key), _) => format!("k:{key}"),
        (None, Some(name)) => format!("n:{name}"),
        (None, None) => "-".to_owned(),
    }
}

/// Which jobs are a runner's, from its group: the SQL condition (issuer `$1`, the key or name
/// `$2` where there is one) and the key or name.
fn members(runner: &str) -> (&'static str, Option<&str>) {
    if let Some(key) = runner.strip_prefix("k:") {
        ("issuer = $1 AND runner_key = $2", Some(key))
    } else if let Some(name) = runner.strip_prefix("n:") {
        ("issuer = $1 AND runner_key IS NULL AND runner_name = $2", Some(name))
    } else {
        ("issuer = $1 AND runner_key IS NULL AND runner_name IS NULL", None)
    }
}

/// A judged job as the window counts it.
#[derive(Clone, Debug)]
pub(super) struct CountedJob {
    pub issuer: String,
    pub job_id: String,
    pub repository: String,
    pub runner_key: Option<String>,
    pub runner_name: Option<String>,
    pub runner_group: Option<String>,
    pub runner_environment: Option<String>,
    pub tier: Option<String>,
    pub single_use: bool,
    pub roles_granted: i64,
    pub seen_at: i64,
}

/// The columns [`CountedJob::from_row`] reads, in its order.
pub(super) const COUNTED_COLUMNS: &str = "issuer, job_id, repository, runner_key, runner_name, runner_group, \
     runner_environment, tier, single_use, roles_granted, seen_at";

impl From<&super::RunnerJob> for CountedJob {
    fn from(job: &super::RunnerJob) -> Self {
        Self {
            issuer: job.issuer.clone(),
            job_id: job.job_id.clone(),
            repository: job.repository.clone(),
            runner_key: job.runner_key.clone(),
            runner_name: job.runner_name.clone(),
            runner_group: job.runner_group.clone(),
            runner_environment: job.runner_environment.clone(),
            tier: job.tier.clone(),
            single_use: job.single_use,
            roles_granted: job.roles_granted,
            seen_at: job.seen_at,
        }
    }
}

impl CountedJob {
    /// From a row whose first columns are [`COUNTED_COLUMNS`].
    pub fn from_row(row: &AnyRow) -> Result<Self, Error> {
        Ok(Self {
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
        })
    }

    pub fn runner(&self) -> String {
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
type Position = (i64, String);

/// What changes in one runner's row: counts to add (negative to take), and candidates for its
/// oldest, latest and first-told jobs.
#[derive(Debug, Default)]
struct RunnerChange {
    jobs: i64,
    single_use_jobs: i64,
    first: Option<Position>,
    latest: Option<(Position, Option<String>, bool)>,
    named: Option<(Position, String)>,
    grouped: Option<(Position, String)>,
    placed: Option<(Position, String)>,
    kept_jobs: i64,
    kept_single_use: i64,
    kept_self_hosted: i64,
    kept_last_seen: i64,
    /// A job it counted left: its window's fields are read again from its jobs.
    read_again: bool,
}

fn earliest<T>(slot: &mut Option<(Position, T)>, position: &Position, value: impl FnOnce() -> T) {
    if slot.as_ref().is_none_or(|(held, _)| position < held) {
        *slot = Some((position.clone(), value()));
    }
}

/// Everything one transaction changes in the maintained rows, gathered per row and written in
/// key order once.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Held alone (a slide or a prune): rows left empty may be deleted without taking locks in
    /// an order another writer could take them in the other way round.
    alone: bool,
    runners: BTreeMap<(String, String), RunnerChange>,
    repositories: BTreeMap<(String, String, String), i64>,
    hours: BTreeMap<(i64, String, bool, bool), (i64, i64)>,
}

impl Changes {
    /// The changes of a transaction holding the window alone ([`Hold::Alone`]).
    pub fn alone() -> Self {
        Self { alone: true, ..Self::default() }
    }

    /// A job newly counted under its runner; in the window's rows too when `in_window`.
    pub fn add(&mut self, job: &CountedJob, in_window: bool) {
        let runner = job.runner();
        let change = self.runners.entry((job.issuer.clone(), runner.clone())).or_default();
        change.kept_jobs += 1;
        change.kept_single_use += i64::from(job.single_use);
        change.kept_self_hosted += i64::from(job.self_hosted());
        change.kept_last_seen = change.kept_last_seen.max(job.seen_at);
        if !in_window {
            return;
        }
        let position = job.position();
        change.jobs += 1;
        change.single_use_jobs += i64::from(job.single_use);
        if change.first.as_ref().is_none_or(|first| position < *first) {
            change.first = Some(position.clone());
        }
        if change.latest.as_ref().is_none_or(|(latest, _, _)| position > *latest) {
            change.latest = Some((position.clone(), job.tier.clone(), job.single_use));
        }
        if let Some(name) = &job.runner_name {
            earliest(&mut change.named, &position, || name.clone());
        }
        if let Some(group) = &job.runner_group {
            earliest(&mut change.grouped, &position, || group.clone());
        }
        if let Some(environment) = &job.runner_environment {
            earliest(&mut change.placed, &position, || environment.clone());
        }
        *self.repositories.entry((job.issuer.clone(), runner, job.repository.clone())).or_default() += 1;
    }

    /// A job no longer counted under `runner` (where it was counted): pruned, or told more of its
    /// runner. Kept counts fall; the window's too when `in_window`.
    pub fn remove(&mut self, job: &CountedJob, runner: &str, in_window: bool) {
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
    pub fn leave(&mut self, job: &CountedJob, runner: &str) {
        let change = self.runners.entry((job.issuer.clone(), runner.to_owned())).or_default();
        change.jobs -= 1;
        change.single_use_jobs -= i64::from(job.single_use);
        change.read_again = true;
        *self.repositories.entry((job.issuer.clone(), runner.to_owned(), job.repository.clone())).or_default() -= 1;
    }

    /// Jobs and roles granted to add to the job's hour.
    pub fn hour(&mut self, job: &CountedJob, jobs: i64, roles_granted: i64) {
        let key =
            (job.seen_at.div_euclid(3600), job.tier.clone().unwrap_or_default(), job.self_hosted(), job.single_use);
        let counts = self.hours.entry(key).or_default();
        counts.0 += jobs;
        counts.1 += roles_granted;
    }

    /// Writes the changes, the window being `since`: hours, then each runner's repositories (a
    /// repository's first job counts it, its last leaving uncounts it), then the runners' rows,
    /// then the fields of runners whose jobs left, read again from their jobs.
    pub async fn apply(self, connection: &mut AnyConnection, kind: StoreKind, since: i64) -> Result<(), Error> {
        apply_hours(connection, kind, &self.hours).await?;
        apply_repositories(connection, kind, &self.repositories).await?;
        apply_runners(connection, kind, &self.runners).await?;
        let mut counted: Vec<&(String, String)> = Vec::new();
        for (issuer, runner, _) in self.repositories.keys() {
            if counted.last().is_none_or(|(i, r)| i != issuer || r != runner) {
                counted.push(
                    self.runners
                        .get_key_value(&(issuer.clone(), runner.clone()))
                        .map(|(key, _)| key)
                        .unwrap_or_else(|| unreachable!()),
                );
            }
        }
        let fell = self.alone && self.repositories.values().any(|jobs| *jobs < 0);
        count_repositories(connection, kind, &counted, fell).await?;
        for ((issuer, runner), change) in &self.runners {
            if change.read_again {
                read_again(connection, issuer, runner, since, self.alone).await?;
            }
        }
        Ok(())
    }
}

async fn apply_hours(
    connection: &mut AnyConnection,
    kind: StoreKind,
    hours: &BTreeMap<(i64, String, bool, bool), (i64, i64)>,
) -> Result<(), Error> {
    let hours: Vec<_> = hours.iter().filter(|(_, counts)| **counts != (0, 0)).collect();
    for rows in hours.chunks(rows_per_statement(6)) {
        let sql = format!(
            "INSERT INTO fleet_hours (hour, tier, self_hosted, single_use, jobs, roles_granted) VALUES {}
             ON CONFLICT (hour, tier, self_hosted, single_use) DO UPDATE SET
                 jobs = fleet_hours.jobs + excluded.jobs,
                 roles_granted = fleet_hours.roles_granted + excluded.roles_granted
             RETURNING hour, tier, self_hosted, single_use, jobs",
            placeholders(kind, rows.len(), 6)
        );
        let mut query = sqlx::query(&sql);
        for ((hour, tier, self_hosted, single_use), (jobs, roles)) in rows {
            query = query
                .bind(*hour)
                .bind(tier)
                .bind(i64::from(*self_hosted))
                .bind(i64::from(*single_use))
                .bind(*jobs)
                .bind(*roles);
        }
        let emptied: Vec<(i64, String, i64, i64)> = query
            .fetch_all(&mut *connection)
            .await?
            .iter()
            .filter(|row| row.try_get::<i64, _>(4).is_ok_and(|jobs| jobs <= 0))
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?)))
            .collect::<Result<_, Error>>()?;
        for (hour, tier, self_hosted, single_use) in emptied {
            sqlx::query(
                "DELETE FROM fleet_hours WHERE hour = $1 AND tier = $2 AND self_hosted = $3 AND single_use = $4",
            )
            .bind(hour)
            .bind(tier)
            .bind(self_hosted)
            .bind(single_use)
            .execute(&mut *connection)
            .await?;
        }
    }
    Ok(())
}

/// Adds each runner's jobs per repository. A row left with none is not counted, and is deleted
/// when its runner's repositories are counted again ([`count_repositories`]).
async fn apply_repositories(
    connection: &mut AnyConnection,
    kind: StoreKind,
    repositories: &BTreeMap<(String, String, String), i64>,
) -> Result<(), Error> {
    let changed: Vec<_> = repositories.iter().filter(|(_, jobs)| **jobs != 0).collect();
    for rows in changed.chunks(rows_per_statement(4)) {
        let sql = format!(
            "INSERT INTO runner_window_repositories (issuer, runner, repository, jobs) VALUES {}
             ON CONFLICT (issuer, runner, repository) DO UPDATE SET jobs = runner_window_repositories.jobs + excluded.jobs",
            placeholders(kind, rows.len(), 4)
        );
        let mut query = sqlx::query(&sql);
        for ((issuer, runner, repository), jobs) in rows {
            query = query.bind(issuer).bind(runner).bind(repository).bind(**jobs);
        }
        query.execute(&mut *connection).await?;
    }
    Ok(())
}

/// Counts again the repositories of the runners whose jobs per repository changed, and, where
/// some fell (`fell`), forgets the repositories left with no job.
async fn count_repositories(
    connection: &mut AnyConnection,
    kind: StoreKind,
    runners: &[&(String, String)],
    fell: bool,
) -> Result<(), Error> {
    for rows in runners.chunks(rows_per_statement(2)) {
        let values = placeholders(kind, rows.len(), 2);
        if fell {
            let sql = format!(
                "DELETE FROM runner_window_repositories WHERE jobs <= 0 AND (issuer, runner) IN (VALUES {values})"
            );
            with_runners(&sql, rows).execute(&mut *connection).await?;
        }
        let sql = format!(
            "UPDATE runner_windows SET repositories = (
                 SELECT COUNT(*) FROM runner_window_repositories counted
                 WHERE counted.issuer = runner_windows.issuer AND counted.runner = runner_windows.runner
                   AND counted.jobs > 0)
             WHERE (issuer, runner) IN (VALUES {values})"
        );
        with_runners(&sql, rows).execute(&mut *connection).await?;
    }
    Ok(())
}

/// `sql` with each runner's issuer and group bound in turn.
fn with_runners<'q>(
    sql: &'q str,
    runners: &[&(String, String)],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    let mut query = sqlx::query(sql);
    for (issuer, runner) in runners {
        query = query.bind(issuer.clone()).bind(runner.clone());
    }
    query
}

/// The columns a runner's row is written with, in order.
const RUNNER_COLUMNS: [&str; 26] = [
    "issuer",
    "runner",
    "runner_key",
    "name_key",
    "jobs",
    "single_use_jobs",
    "repositories",
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
    "kept_jobs",
    "kept_single_use",
    "kept_self_hosted",
    "kept_last_seen",
];

/// `SET` clauses taking the row's fields from `excluded` where its position (`at`, `job`) comes
/// `before` (or after) the row's own, or the row has none.
fn take_when(at: &str, job: &str, values: &[&str], after: bool) -> String {
    let cmp = if after { ">" } else { "<" };
    let when = format!(
        "excluded.{at} IS NOT NULL AND (runner_windows.{at} IS NULL OR excluded.{at} {cmp} runner_windows.{at}
             OR (excluded.{at} = runner_windows.{at} AND excluded.{job} {cmp} runner_windows.{job}))"
    );
    [at, job]
        .iter()
        .chain(values)
        .map(|column| format!("{column} = CASE WHEN {when} THEN excluded.{column} ELSE runner_windows.{column} END"))
        .collect::<Vec<_>>()
        .join(",\n")
}

async fn apply_runners(
    connection: &mut AnyConnection,
    kind: StoreKind,
    runners: &BTreeMap<(String, String), RunnerChange>,
) -> Result<(), Error> {
    let runners: Vec<_> = runners.iter().collect();
    let sums = ["jobs", "single_use_jobs", "kept_jobs", "kept_single_use", "kept_self_hosted"]
        .map(|column| format!("{column} = runner_windows.{column} + excluded.{column}"))
        .join(",\n");
    let set = [
        sums,
        "kept_last_seen = CASE WHEN excluded.kept_last_seen > runner_windows.kept_last_seen
             THEN excluded.kept_last_seen ELSE runner_windows.kept_last_seen END"
            .to_owned(),
        take_when("first_at", "first_job", &[], false),
        take_when("latest_at", "latest_job", &["tier", "single_use"], true),
        take_when("named_at", "named_job", &["runner_name"], false),
        take_when("grouped_at", "grouped_job", &["runner_group"], false),
        take_when("placed_at", "placed_job", &["runner_environment"], false),
    ]
    .join(",\n");
    for rows in runners.chunks(rows_per_statement(RUNNER_COLUMNS.len())) {
        let sql = format!(
            "INSERT INTO runner_windows ({}) VALUES {}
             ON CONFLICT (issuer, runner) DO UPDATE SET {set}",
            RUNNER_COLUMNS.join(", "),
            placeholders(kind, rows.len(), RUNNER_COLUMNS.len())
        );
        let mut query = sqlx::query(&sql);
        for ((issuer, runner), change) in rows {
            let key = runner.strip_prefix("k:");
            let name_key = runner.strip_prefix("n:");
            let (first_at, first_job) = split(change.first.clone());
            let (latest, tier, single_use) = match &change.latest {
                Some((position, tier, single_use)) => {
                    (Some(position.clone()), tier.clone(), Some(i64::from(*single_use)))
                }
                None => (None, None, None),
            };
            let (latest_at, latest_job) = split(latest);
            let (named, (named_at, named_job)) = told(&change.named);
            let (grouped, (grouped_at, grouped_job)) = told(&change.grouped);
            let (placed, (placed_at, placed_job)) = told(&change.placed);
            query = query
                .bind(issuer)
                .bind(runner)
                .bind(key)
                .bind(name_key)
                .bind(change.jobs)
                .bind(change.single_use_jobs)
                // Counted once the runner's repositories are written (`count_repositories`).
                .bind(0_i64)
                .bind(first_at)
                .bind(first_job)
                .bind(latest_at)
                .bind(latest_job)
                .bind(tier)
                .bind(single_use)
                .bind(named)
                .bind(named_at)
                .bind(named_job)
                .bind(grouped)
                .bind(grouped_at)
                .bind(grouped_job)
                .bind(placed)
                .bind(placed_at)
                .bind(placed_job)
                .bind(change.kept_jobs)
                .bind(change.kept_single_use)
                .bind(change.kept_self_hosted)
                .bind(change.kept_last_seen);
        }
        query.execute(&mut *connection).await?;
    }
    Ok(())
}

fn split(position: Option<Position>) -> (Option<i64>, Option<String>) {
    match position {
        Some((at, job)) => (Some(at), Some(job)),
        None => (None, None),
    }
}

fn told(told: &Option<(Position, String)>) -> (Option<String>, (Option<i64>, Option<String>)) {
    match told {
        Some((position, value)) => (Some(value.clone()), split(Some(position.clone()))),
        None => (None, (None, None)),
    }
}

/// Reads a runner's window fields and its last kept job again from its jobs, each by index and
/// one row. A runner with no kept job is forgotten when the window is held `alone`; otherwise its
/// row stays, counting nothing, for the next slide or prune to forget.
async fn read_again(
    connection: &mut AnyConnection,
    issuer: &str,
    runner: &str,
    since: i64,
    alone: bool,
) -> Result<(), Error> {
    let (members, value) = members(runner);
    // `$2` is the key or name; a runner without one takes `since` as `$2`.
    let since_param = if value.is_some() { "$3" } else { "$2" };
    let probe = |columns: &str, told: &str, order: &str| {
        format!(
            "SELECT seen_at, job_id{columns} FROM runner_jobs WHERE {members} AND seen_at >= {since_param}{told}
             ORDER BY {order} LIMIT 1"
        )
    };
    let first = probe("", "", "seen_at, job_id");
    let latest = probe(", tier, single_use", "", "seen_at DESC, job_id DESC");
    let named = probe(", runner_name", " AND runner_name IS NOT NULL", "seen_at, job_id");
    let grouped = probe(", runner_group", " AND runner_group IS NOT NULL", "seen_at, job_id");
    let placed = probe(", runner_environment", " AND runner_environment IS NOT NULL", "seen_at, job_id");
    let last_kept = format!("SELECT MAX(seen_at) FROM runner_jobs WHERE {members}");

    let fetch = async |sql: &str, connection: &mut AnyConnection, with_since: bool| -> Result<Option<AnyRow>, Error> {
        let mut query = sqlx::query(sql).bind(issuer);
        if let Some(value) = value {
            query = query.bind(value);
        }
        if with_since {
            query = query.bind(since);
        }
        Ok(query.fetch_optional(connection).await?)
    };
    let last_kept =
        fetch(&last_kept, connection, false).await?.map(|row| row.try_get::<Option<i64>, _>(0)).transpose()?.flatten();
    if last_kept.is_none() && alone {
        for table in ["runner_windows", "runner_window_repositories"] {
            sqlx::query(&format!("DELETE FROM {table} WHERE issuer = $1 AND runner = $2"))
                .bind(issuer)
                .bind(runner)
                .execute(&mut *connection)
                .await?;
        }
        return Ok(());
    }
    let position = |row: &Option<AnyRow>| -> Result<(Option<i64>, Option<String>), Error> {
        match row {
            Some(row) => Ok((Some(row.try_get(0)?), Some(row.try_get(1)?))),
            None => Ok((None, None)),
        }
    };
    let value_of = |row: &Option<AnyRow>| -> Result<Option<String>, Error> {
        row.as_ref().map(|row| row.try_get::<String, _>(2)).transpose().map_err(Error::from)
    };
    let first = fetch(&first, connection, true).await?;
    let latest = fetch(&latest, connection, true).await?;
    let named = fetch(&named, connection, true).await?;
    let grouped = fetch(&grouped, connection, true).await?;
    let placed = fetch(&placed, connection, true).await?;
    let (first_at, first_job) = position(&first)?;
    let (latest_at, latest_job) = position(&latest)?;
    let (tier, single_use) = match &latest {
        Some(row) => (row.try_get::<Option<String>, _>(2)?, Some(row.try_get::<i64, _>(3)?)),
        None => (None, None),
    };
    let (named_at, named_job) = position(&named)?;
    let (grouped_at, grouped_job) = position(&grouped)?;
    let (placed_at, placed_job) = position(&placed)?;
    sqlx::query(
        "UPDATE runner_windows SET first_at = $3, first_job = $4, latest_at = $5, latest_job = $6, tier = $7,
             single_use = $8, runner_name = $9, named_at = $10, named_job = $11, runner_group = $12,
             grouped_at = $13, grouped_job = $14, runner_environment = $15, placed_at = $16, placed_job = $17,
             kept_last_seen = $18
         WHERE issuer = $1 AND runner = $2",
    )
    .bind(issuer)
    .bind(runner)
    .bind(first_at)
    .bind(first_job)
    .bind(latest_at)
    .bind(latest_job)
    .bind(tier)
    .bind(single_use)
    .bind(value_of(&named)?)
    .bind(named_at)
    .bind(named_job)
    .bind(value_of(&grouped)?)
    .bind(grouped_at)
    .bind(grouped_job)
    .bind(value_of(&placed)?)
    .bind(placed_at)
    .bind(placed_job)
    // None kept: 0, so that the next job recorded on it is its last.
    .bind(last_kept.unwrap_or(0))
    .execute(&mut *connection)
    .await?;
    Ok(())
}

/// Moves the window's start forward to `to` by one slice of leaving jobs (at most
/// [`SLIDE_SLICE`], or every job of one second), in the caller's transaction; answers where it
/// now starts.
pub(super) async fn slide_slice(connection: &mut AnyConnection, kind: StoreKind, to: i64) -> Result<i64, Error> {
    let since = since(connection, kind, Hold::Alone).await?;
    if since >= to {
        return Ok(since);
    }
    let cut: Option<i64> = sqlx::query(
        "SELECT seen_at FROM runner_jobs WHERE seen_at >= $1 AND seen_at < $2 ORDER BY seen_at LIMIT 1 OFFSET $3",
    )
    .bind(since)
    .bind(to)
    .bind(SLIDE_SLICE)
    .fetch_optional(&mut *connection)
    .await?
    .map(|row| row.try_get(0))
    .transpose()?;
    let cut = match cut {
        Some(cut) if cut > since => cut,
        Some(_) => since + 1,
        None => to,
    };
    let mut changes = Changes::alone();
    {
        let sql = format!("SELECT {COUNTED_COLUMNS} FROM runner_jobs WHERE seen_at >= $1 AND seen_at < $2");
        let mut leaving = sqlx::query(&sql).bind(since).bind(cut).fetch(&mut *connection);
        while let Some(row) = leaving.try_next().await? {
            let job = CountedJob::from_row(&row)?;
            changes.leave(&job, &job.runner());
        }
    }
    sqlx::query("UPDATE fleet_window SET since = $1 WHERE id = 1").bind(cut).execute(&mut *connection).await?;
    changes.apply(connection, kind, cut).await?;
    Ok(cut)
}
