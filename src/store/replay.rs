//! Tokens already exchanged.

use sqlx::{Any, Executor};

use super::{Error, Store};

impl Store {
    /// Records that a token was exchanged. False when it already was: a replay.
    pub async fn record_exchange(&self, issuer: &str, token_id: &str, expires_at: i64) -> Result<bool, Error> {
        record_exchange_on(&mut *self.writer().await?, issuer, token_id, expires_at).await
    }

    /// Forgets exchanged tokens that expired before `before` (unix seconds): they can no longer
    /// verify, so they can no longer be replayed.
    pub async fn prune_exchanged_tokens(&self, before: i64) -> Result<u64, Error> {
        let deleted = sqlx::query("DELETE FROM exchanged_tokens WHERE expires_at < $1")
            .bind(before)
            .execute(&mut *self.writer().await?)
            .await?
            .rows_affected();
        Ok(deleted)
    }
}

/// Inserts nothing for a token already spent.
pub(super) const SPEND_TOKEN: &str = "INSERT INTO exchanged_tokens (issuer, token_id, expires_at) VALUES ($1, $2, $3)
 ON CONFLICT (issuer, token_id) DO NOTHING";

/// [`Store::record_exchange`] on `executor`, e.g. inside a lease's transaction.
pub(super) async fn record_exchange_on<'e>(
    executor: impl Executor<'e, Database = Any>,
    issuer: &str,
    token_id: &str,
    expires_at: i64,
) -> Result<bool, Error> {
    let inserted =
        sqlx::query(SPEND_TOKEN).bind(issuer).bind(token_id).bind(expires_at).execute(executor).await?.rows_affected();
    Ok(inserted == 1)
}
