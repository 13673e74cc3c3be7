//! Refused exchanges counted against the job's runner, by reason: one row per runner, reason and
//! day, so a runner that replays tokens a million times costs one row a day, not a million.

use std::collections::BTreeMap;

use sqlx::Row;

use crate::store::{Error, Store};

/// One refused exchange, against the runner its job ran on as far as it is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerRefusal {
    pub issuer: String,
    pub runner_key: Option<String>,
    /// `replayed`, `job_ended`, `ci_unavailable`, `runner_reused`, `runner_unknown`,
    /// `exchange_cap`, `policy`.
    pub reason: &'static str,
    /// Unix seconds.
    pub seen_at: i64,
}

/// Refused attempts of one runner (`None`: runners nobody told) for one reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusalCount {
    pub issuer: String,
    pub runner_key: Option<String>,
    pub reason: String,
    pub attempts: i64,
}

const DAY: i64 = 24 * 3600;

impl Store {
    /// Adds `refusals` to their runner's daily counts, each count kept `keep_for` seconds past
    /// its last attempt.
    pub async fn record_runner_refusals(&self, refusals: &[RunnerRefusal], keep_for: i64) -> Result<(), Error> {
        let mut counts: BTreeMap<(&str, &str, &str, i64), (i64, i64)> = BTreeMap::new();
        for refusal in refusals {
            let key = refusal.runner_key.as_deref().unwrap_or("");
            let count =
                counts.entry((&refusal.issuer, key, refusal.reason, refusal.seen_at.div_euclid(DAY))).or_default();
            count.0 += 1;
            count.1 = count.1.max(refusal.seen_at);
        }
        for ((issuer, runner_key, reason, day), (attempts, last_seen)) in counts {
            sqlx::query(
                "INSERT INTO runner_refusals (issuer, runner_key, reason, day, attempts, last_seen, keep_until)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (issuer, runner_key, reason, day) DO UPDATE SET
                     attempts = runner_refusals.attempts + excluded.attempts,
                     last_seen = CASE WHEN runner_refusals.last_seen > excluded.last_seen
                                      THEN runner_refusals.last_seen ELSE excluded.last_seen END,
                     keep_until = CASE WHEN runner_refusals.keep_until > excluded.keep_until
                                       THEN runner_refusals.keep_until ELSE excluded.keep_until END",
            )
            .bind(issuer)
            .bind(runner_key)
            .bind(reason)
            .bind(day)
            .bind(attempts)
            .bind(last_seen)
            .bind(last_seen.saturating_add(keep_for))
            .execute(&mut *self.writer().await?)
            .await?;
        }
        Ok(())
    }

    /// Refused attempts per runner and reason on the days from `since`'s (unix seconds) on.
    pub async fn runner_refusals_since(&self, since: i64) -> Result<Vec<RefusalCount>, Error> {
        let rows = sqlx::query(
            "SELECT issuer, runner_key, reason, CAST(SUM(attempts) AS BIGINT) FROM runner_refusals
             WHERE day >= $1 GROUP BY issuer, runner_key, reason ORDER BY issuer, runner_key, reason",
        )
        .bind(since.div_euclid(DAY))
        .fetch_all(self.reads())
        .await?;
        rows.iter()
            .map(|row| {
                let runner_key: String = row.try_get(1)?;
                Ok(RefusalCount {
                    issuer: row.try_get(0)?,
                    runner_key: (!runner_key.is_empty()).then_some(runner_key),
                    reason: row.try_get(2)?,
                    attempts: row.try_get(3)?,
                })
            })
            .collect()
    }
}
