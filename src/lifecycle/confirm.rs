//! The exchange's last step for a credential that lives only a short grace until its handle is
//! durable (a Vault token, `backends/vault/mint_grace.rs`): once its lease is active in the
//! store, the credential is made whole. A crash before that leaves a credential that dies by
//! itself within the grace; a crash after it leaves one the broker revokes at the job's end.

use super::{Error, Exchange};
use crate::backends::{self, Confirmation};

impl Exchange {
    /// Confirms the credential of `lease_id`, whose lease is active. A confirmation Vault could
    /// not take (unreachable) is tried once more: the job has spent its token on this exchange.
    /// If it still fails, the credential is not handed out to die unannounced at the end of its
    /// grace: its lease is queued for revocation and the exchange fails with the backend's
    /// error, which the job sees as `backend_unavailable` or `backend_refused`.
    pub(super) async fn confirm(
        &self,
        lease_id: &str,
        backend: &'static str,
        confirmation: &Confirmation,
    ) -> Result<(), Error> {
        let mut confirmed = self.confirm_once(backend, confirmation).await;
        if let Err(backends::Error::Unavailable { .. }) = &confirmed {
            confirmed = self.confirm_once(backend, confirmation).await;
        }
        let Err(error) = confirmed else { return Ok(()) };
        tracing::warn!(%lease_id, %error, "cannot extend a credential past its mint grace; revoking it");
        if let Err(store_error) = self.store.request_revocation(lease_id).await {
            // Unextended, the credential dies with its grace anyway.
            tracing::warn!(%lease_id, error = %store_error, "cannot queue the revocation of an unconfirmed credential");
        }
        self.revocations.wake();
        Err(error.into())
    }

    async fn confirm_once(&self, backend: &'static str, confirmation: &Confirmation) -> Result<(), backends::Error> {
        let started = std::time::Instant::now();
        let confirmed = self.backends.confirm(confirmation).await;
        crate::metrics::backend_call(backend, "confirm", started.elapsed(), confirmed.is_ok());
        confirmed
    }
}
