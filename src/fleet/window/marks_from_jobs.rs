//! A runner's marks read again from its own jobs, when a job it counted left: each mark one row
//! found by index (the runner's jobs in time order), never a pass over its jobs.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::changes::{Marks, Position};
use super::members;
use crate::store::Error;

/// Reads `runner`'s marks in the window from `since`, and its last kept job, again from its jobs.
/// A runner with no kept job is forgotten when the window is held `alone`; otherwise its row
/// stays, counting nothing, for the next slide or prune to forget.
pub(super) async fn read_again(
    connection: &mut AnyConnection,
    issuer: &str,
    runner: &str,
    since: i64,
    alone: bool,
) -> Result<(), Error> {
    let (members, value) = members(runner);
    let probe = Probe { issuer, value, since };
    let last_kept: Option<i64> = probe
        .row(connection, &format!("SELECT MAX(seen_at) FROM runner_jobs WHERE {members}"), false)
        .await?
        .map(|row| row.try_get::<Option<i64>, _>(0))
        .transpose()?
        .flatten();
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
    // `$2` is the key or name; a runner without one takes `since` as `$2`.
    let since_param = if value.is_some() { "$3" } else { "$2" };
    let first = |columns: &str, told: &str, order: &str| {
        format!(
            "SELECT seen_at, job_id{columns} FROM runner_jobs WHERE {members} AND seen_at >= {since_param}{told}
             ORDER BY {order} LIMIT 1"
        )
    };
    let oldest = probe.row(connection, &first("", "", "seen_at, job_id"), true).await?;
    let latest = first(", tier, single_use", "", "seen_at DESC, job_id DESC");
    let latest = probe.row(connection, &latest, true).await?;
    let mut marks = Marks {
        first: oldest.as_ref().map(position).transpose()?,
        latest: latest
            .as_ref()
            .map(|row| Ok::<_, Error>((position(row)?, row.try_get(2)?, row.try_get::<i64, _>(3)? != 0)))
            .transpose()?,
        ..Marks::default()
    };
    for (column, mark) in [
        ("runner_name", &mut marks.named),
        ("runner_group", &mut marks.grouped),
        ("runner_environment", &mut marks.placed),
    ] {
        let sql = first(&format!(", {column}"), &format!(" AND {column} IS NOT NULL"), "seen_at, job_id");
        *mark = probe
            .row(connection, &sql, true)
            .await?
            .map(|row| Ok::<_, Error>((position(&row)?, row.try_get(2)?)))
            .transpose()?;
    }
    let set: Vec<String> =
        Marks::COLUMNS.iter().enumerate().map(|(at, column)| format!("{column} = ${}", at + 1)).collect();
    let sql = format!(
        "UPDATE runner_windows SET {}, kept_last_seen = $16 WHERE issuer = $17 AND runner = $18",
        set.join(", ")
    );
    marks
        .bind(sqlx::query(&sql))
        // None kept: 0, so that the next job recorded on it is its last.
        .bind(last_kept.unwrap_or(0))
        .bind(issuer)
        .bind(runner)
        .execute(&mut *connection)
        .await?;
    Ok(())
}

/// A job's position from a row that starts with `seen_at, job_id`.
fn position(row: &AnyRow) -> Result<Position, Error> {
    Ok((row.try_get(0)?, row.try_get(1)?))
}

/// One runner's jobs, asked one row at a time.
struct Probe<'a> {
    issuer: &'a str,
    value: Option<&'a str>,
    since: i64,
}

impl Probe<'_> {
    async fn row(&self, connection: &mut AnyConnection, sql: &str, with_since: bool) -> Result<Option<AnyRow>, Error> {
        let mut query = sqlx::query(sql).bind(self.issuer);
        if let Some(value) = self.value {
            query = query.bind(value);
        }
        if with_since {
            query = query.bind(self.since);
        }
        Ok(query.fetch_optional(connection).await?)
    }
}
