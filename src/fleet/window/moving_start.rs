//! The window sliding forward: the jobs that left it are taken from their runners' rows, a slice
//! at a time, each slice a transaction of its own on the writer.

use futures_util::TryStreamExt;
use sqlx::{AnyConnection, Row};

use super::changes::{COUNTED_COLUMNS, Changes, counted_job};
use super::{FLEET_WINDOW, Hold, since};
use crate::store::{Error, Store, StoreKind};

/// Jobs taken from the window per transaction of a slide: the writer is held for one slice.
const SLIDE_SLICE: i64 = 1_000;

impl Store {
    /// Moves the maintained window's start forward to `to`; answers where the window starts. It
    /// never moves back, nor past [`FLEET_WINDOW`] before now.
    pub async fn slide_fleet_window(&self, to: i64) -> Result<i64, Error> {
        let to = to.min(crate::clock::now().saturating_sub(FLEET_WINDOW));
        loop {
            let mut writer = self.writer().await?;
            let mut tx = writer.begin_write().await?;
            let since = slide_slice(&mut tx, self.kind(), to).await?;
            tx.commit().await?;
            if since >= to {
                return Ok(since);
            }
        }
    }
}

/// Moves the window's start forward to `to` by one slice of leaving jobs (at most
/// [`SLIDE_SLICE`], or every job of one second), in the caller's transaction; answers where it
/// now starts.
async fn slide_slice(connection: &mut AnyConnection, kind: StoreKind, to: i64) -> Result<i64, Error> {
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
            let job = counted_job(&row)?;
            changes.leave(&job, &job.runner());
        }
    }
    sqlx::query("UPDATE fleet_window SET since = $1 WHERE id = 1").bind(cut).execute(&mut *connection).await?;
    changes.apply(connection, kind, cut).await?;
    Ok(cut)
}
