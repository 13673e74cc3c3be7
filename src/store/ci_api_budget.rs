//! Each issuer's CI API call budget, kept in the store so that every replica draws on the same
//! one: `max_calls_per_minute` holds for the issuer, not per broker process. A bucket refilled
//! continuously up to a minute's calls, and a pause until the moment the CI's headers named.

use sqlx::Row;

use super::{Error, Store};
use crate::clock::now_ms;

/// How often a take is tried again when another replica changed the bucket in between.
const TRIES: usize = 8;

/// What a take got: calls granted, or how long the CI asked the broker to wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallsTaken {
    pub granted: i64,
    /// Milliseconds left of a pause; 0 when none.
    pub paused_ms: i64,
}

impl Store {
    /// Takes up to `wanted` calls of `issuer`'s budget (`per_minute` calls a minute), leaving at
    /// least `keep` calls in it.
    pub async fn take_ci_api_calls(
        &self,
        issuer: &str,
        wanted: i64,
        keep: i64,
        per_minute: i64,
    ) -> Result<CallsTaken, Error> {
        let full = per_minute.saturating_mul(1000);
        for _ in 0..TRIES {
            let now = now_ms();
            let mut writer = self.writer().await?;
            let read = "SELECT calls_milli, refilled_at, paused_until FROM ci_api_budgets WHERE issuer = $1";
            let mut row = sqlx::query(read).bind(issuer).fetch_optional(&mut *writer).await?;
            if row.is_none() {
                // The issuer's first call: a full budget, unless another replica wrote one first.
                sqlx::query(
                    "INSERT INTO ci_api_budgets (issuer, calls_milli, refilled_at, paused_until) VALUES ($1, $2, $3, 0)
                     ON CONFLICT (issuer) DO NOTHING",
                )
                .bind(issuer)
                .bind(full)
                .bind(now)
                .execute(&mut *writer)
                .await?;
                row = sqlx::query(read).bind(issuer).fetch_optional(&mut *writer).await?;
            }
            let Some(row) = row else { return Err(Error::Corrupt(format!("no CI API budget row for `{issuer}`"))) };
            let (calls, refilled_at, paused_until): (i64, i64, i64) =
                (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            if paused_until > now {
                return Ok(CallsTaken { granted: 0, paused_ms: paused_until - now });
            }
            // per_minute calls a minute is per_minute / 60 milli-calls a millisecond.
            let refill = (now - refilled_at).max(0).saturating_mul(per_minute) / 60;
            let available = calls.saturating_add(refill).min(full);
            let granted = wanted.min(available / 1000 - keep).max(0);
            // Written only if no other replica took from the bucket since it was read.
            let written = sqlx::query(
                "UPDATE ci_api_budgets SET calls_milli = $1, refilled_at = $2
                 WHERE issuer = $3 AND calls_milli = $4 AND refilled_at = $5",
            )
            .bind(available - granted * 1000)
            .bind(now)
            .bind(issuer)
            .bind(calls)
            .bind(refilled_at)
            .execute(&mut *writer)
            .await?
            .rows_affected();
            if written == 1 {
                return Ok(CallsTaken { granted, paused_ms: 0 });
            }
        }
        // Contended every time: nothing granted now, as with a spent budget.
        Ok(CallsTaken { granted: 0, paused_ms: 0 })
    }

    /// Returns calls taken but not made, up to a full budget.
    pub async fn give_back_ci_api_calls(&self, issuer: &str, calls: i64, per_minute: i64) -> Result<(), Error> {
        if calls <= 0 {
            return Ok(());
        }
        let full = per_minute.saturating_mul(1000);
        sqlx::query(
            "UPDATE ci_api_budgets SET calls_milli = CASE WHEN calls_milli + $1 > $2 THEN $2 ELSE calls_milli + $1 END
             WHERE issuer = $3",
        )
        .bind(calls.saturating_mul(1000))
        .bind(full)
        .bind(issuer)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }

    /// No call to `issuer`'s API until `until_ms`, unless a later pause is already set.
    pub async fn pause_ci_api(&self, issuer: &str, until_ms: i64) -> Result<(), Error> {
        sqlx::query(
            "UPDATE ci_api_budgets SET paused_until = CASE WHEN paused_until > $1 THEN paused_until ELSE $1 END
             WHERE issuer = $2",
        )
        .bind(until_ms)
        .bind(issuer)
        .execute(&mut *self.writer().await?)
        .await?;
        Ok(())
    }
}
