//! The fleet's figures as one replica last computed them, for every replica to publish.

use sqlx::Row;

use crate::store::{Error, Store};

/// Figures as stored: opaque to the store (the fleet's JSON), with when and how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFigures {
    /// Unix milliseconds.
    pub computed_at_ms: i64,
    /// How long computing them took, in milliseconds: what paces the next computation.
    pub took_ms: i64,
    pub figures: String,
}

impl Store {
    /// The figures stored under `name`, if any.
    pub async fn fleet_figures(&self, name: &str) -> Result<Option<StoredFigures>, Error> {
        let row = sqlx::query("SELECT computed_at_ms, took_ms, figures FROM fleet_figures WHERE name = $1")
            .bind(name)
            .fetch_optional(self.reads())
            .await?;
        row.map(|row| {
            Ok(StoredFigures { computed_at_ms: row.try_get(0)?, took_ms: row.try_get(1)?, figures: row.try_get(2)? })
        })
        .transpose()
    }

    /// Stores `figures` under `name`, replacing older ones (never newer ones: two replicas that
    /// computed at once keep the later).
    pub async fn put_fleet_figures(&self, name: &str, figures: &StoredFigures) -> Result<(), Error> {
        sqlx::query(
            "INSERT INTO fleet_figures (name, computed_at_ms, took_ms, figures) VALUES ($1, $2, $3, $4)
             ON CONFLICT (name) DO UPDATE SET computed_at_ms = excluded.computed_at_ms, took_ms = excluded.took_ms,
                 figures = excluded.figures
             WHERE fleet_figures.computed_at_ms <= excluded.computed_at_ms",
        )
        .bind(name)
        .bind(figures.computed_at_ms)
        .bind(figures.took_ms)
        .bind(&figures.figures)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }
}
