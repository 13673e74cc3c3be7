//! Writing a transaction's changes to the fleet's window: hours, each runner's jobs per
//! repository, the runners' rows, their repositories counted again, and the marks of runners
//! whose jobs left read again from their jobs.

use std::collections::BTreeMap;

use sqlx::{AnyConnection, Row};

use super::changes::{Changes, Marks, RunnerChange};
use super::marks_from_jobs::read_again;
use crate::store::{Error, Query, StoreKind, placeholders, rows_per_statement};

impl Changes {
    /// Writes the changes, the window being `since`.
    pub async fn apply(self, connection: &mut AnyConnection, kind: StoreKind, since: i64) -> Result<(), Error> {
        apply_hours(connection, kind, &self.hours).await?;
        apply_repositories(connection, kind, &self.repositories).await?;
        apply_runners(connection, kind, &self.runners).await?;
        let mut counted: Vec<(String, String)> = Vec::new();
        for (issuer, runner, _) in self.repositories.keys() {
            if counted.last().is_none_or(|(i, r)| i != issuer || r != runner) {
                counted.push((issuer.clone(), runner.clone()));
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
    runners: &[(String, String)],
    fell: bool,
) -> Result<(), Error> {
    for rows in runners.chunks(rows_per_statement(2)) {
        let values = placeholders(kind, rows.len(), 2);
        if fell {
            let sql = format!(
                "DELETE FROM runner_window_repositories WHERE jobs <= 0 AND (issuer, runner) IN (SELECT column1, column2 FROM (VALUES {values}) AS asked)"
            );
            with_runners(&sql, rows).execute(&mut *connection).await?;
        }
        let sql = format!(
            "UPDATE runner_windows SET repositories = (
                 SELECT COUNT(*) FROM runner_window_repositories counted
                 WHERE counted.issuer = runner_windows.issuer AND counted.runner = runner_windows.runner
                   AND counted.jobs > 0)
             WHERE (issuer, runner) IN (SELECT column1, column2 FROM (VALUES {values}) AS asked)"
        );
        with_runners(&sql, rows).execute(&mut *connection).await?;
    }
    Ok(())
}

/// `sql` with each runner's issuer and group bound in turn.
fn with_runners<'q>(sql: &'q str, runners: &[(String, String)]) -> Query<'q> {
    let mut query = sqlx::query(sql);
    for (issuer, runner) in runners {
        query = query.bind(issuer.clone()).bind(runner.clone());
    }
    query
}

/// `SET` clauses taking the row's columns from `excluded` where its position (`at`, `job`) comes
/// before (or `after`) the row's own, or the row has none.
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

/// Adds each runner's counts to its row and takes the marks that come first (or last).
async fn apply_runners(
    connection: &mut AnyConnection,
    kind: StoreKind,
    runners: &BTreeMap<(String, String), RunnerChange>,
) -> Result<(), Error> {
    let counts = ["jobs", "single_use_jobs", "kept_jobs", "kept_single_use", "kept_self_hosted"];
    let columns: Vec<&str> = ["issuer", "runner", "runner_key", "name_key", "repositories"]
        .into_iter()
        .chain(counts)
        .chain(["kept_last_seen"])
        .chain(Marks::COLUMNS)
        .collect();
    let set = [
        counts.map(|column| format!("{column} = runner_windows.{column} + excluded.{column}")).join(",\n"),
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
    let runners: Vec<_> = runners.iter().collect();
    for rows in runners.chunks(rows_per_statement(columns.len())) {
        let sql = format!(
            "INSERT INTO runner_windows ({}) VALUES {}
             ON CONFLICT (issuer, runner) DO UPDATE SET {set}",
            columns.join(", "),
            placeholders(kind, rows.len(), columns.len())
        );
        let mut query = sqlx::query(&sql);
        for ((issuer, runner), change) in rows {
            query = query
                .bind(issuer)
                .bind(runner)
                .bind(runner.strip_prefix("k:"))
                .bind(runner.strip_prefix("n:"))
                // Counted once the runner's repositories are written (`count_repositories`).
                .bind(0_i64)
                .bind(change.jobs)
                .bind(change.single_use_jobs)
                .bind(change.kept_jobs)
                .bind(change.kept_single_use)
                .bind(change.kept_self_hosted)
                .bind(change.kept_last_seen);
            query = change.marks.bind(query);
        }
        query.execute(&mut *connection).await?;
    }
    Ok(())
}
