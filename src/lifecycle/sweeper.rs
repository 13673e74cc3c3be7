//! Periodic housekeeping: expire leases whose credentials died by themselves, revoke those
//! that would outlive their lease (GitHub tokens), forget records
//! past their retention, so the store stays bounded; prune AWS deny lists of expired sessions.

use std::sync::Arc;

use super::Broker;
use super::unrecorded::PENDING_GIVE_UP_SECONDS;
use crate::clock::now;

/// Replay records are kept this long past a token's `exp`, beyond the clock skew verification
/// tolerates, so a token is never forgotten while it could still verify.
const REPLAY_RETENTION_SECONDS: i64 = 120;
/// A credential being revoked is only given up as expired this long after its expiry, in
/// case the backend's clock is behind ours.
const REVOKING_GRACE_SECONDS: i64 = 30;

pub async fn run(broker: Arc<Broker>) {
    let mut ticks = tokio::time::interval(broker.lifecycle.sweep_interval);
    loop {
        ticks.tick().await;
        if let Err(error) = sweep(&broker).await {
            tracing::warn!(%error, "sweep failed; retrying at the next interval");
        }
    }
}

pub async fn sweep(broker: &Broker) -> Result<(), crate::store::Error> {
    let now = now();
    let retention = broker.lifecycle.retention.as_secs() as i64;
    let store = &broker.store;
    let revoking_at_expiry = store.revoke_expired_leases("github", now).await?;
    if revoking_at_expiry > 0 {
        broker.revocations.wake();
    }
    broker.exchange.settle_unrecorded(now - PENDING_GIVE_UP_SECONDS).await?;
    let expired = store.expire_leases(now, REVOKING_GRACE_SECONDS).await?;
    let replays = store.prune_exchanged_tokens(now - REPLAY_RETENTION_SECONDS).await?;
    let leases = store.prune_leases(now - retention).await?;
    let jobs = store.prune_jobs(now, now - retention).await?;
    let runners = store.prune_runners(now).await?;
    if revoking_at_expiry + expired + replays + leases + jobs + runners > 0 {
        tracing::info!(
            revoking_at_expiry,
            expired,
            replays,
            leases,
            jobs,
            runners,
            "sweep: expired leases and pruned records"
        );
    }
    delete_unused_bound_roles(broker, now).await?;
    // Backend housekeeping logs its own failures: one unreachable backend must not stop the sweep.
    if broker.backends.aws.is_some() {
        let _lock = broker.store.lock(super::revocation::AWS_DENY_LISTS_LOCK).await?;
        broker.backends.prune().await;
    }
    Ok(())
}

/// Deletes the Vault token roles bound to address blocks that no lease uses any more: none of
/// the block's leases is pending (being minted, its mint grace not yet ended) or active and
/// unexpired. Not sooner: OpenBao refuses to renew a token whose role is gone
/// (`backends/vault/bound.rs`), and the broker renews each token once to end its grace. An
/// exchange that starts just after the store was read and mints through a role deleted just
/// after may fail to end its grace: it is refused and may be retried, never left unbound.
async fn delete_unused_bound_roles(broker: &Broker, now: i64) -> Result<(), crate::store::Error> {
    let Some(vault) = &broker.backends.vault else { return Ok(()) };
    if !broker.policy.roles().any(|role| role.vault.is_some() && role.bind.is_some()) {
        return Ok(());
    }
    let in_use: Vec<ipnet::IpNet> =
        broker.store.bound_blocks_in_use(now).await?.iter().filter_map(|block| block.parse().ok()).collect();
    if let Err(error) = vault.delete_unused_bound_roles(&in_use).await {
        tracing::warn!(%error, "deleting Vault token roles of address blocks no lease uses failed; retrying at the next sweep");
    }
    Ok(())
}
