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

mod apply;
mod changes;
mod marks_from_jobs;
mod moving_start;
mod read;
mod worst_runners;

use sqlx::{AnyConnection, Row};

use crate::store::{Error, StoreKind};

pub(super) use changes::{COUNTED_COLUMNS, Changes, counted_job};
pub use read::RunnerCounts;
pub use worst_runners::{RunnersAsked, WorstRunners};

/// The window the maintained rows serve: `runners report`'s default and the `/metrics` figures.
pub const FLEET_WINDOW: i64 = 30 * 24 * 3600;

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
fn runner_of(key: Option<&str>, name: Option<&str>) -> String {
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
