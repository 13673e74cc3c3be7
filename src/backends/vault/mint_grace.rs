//! The mint's grace: a job's token is created to live only `[vault] mint_grace_seconds`, with
//! the role's TTL as its hard limit, and is extended to that TTL by accessor once its lease (and
//! so its accessor) is durable in the store. A crash between the token's creation and that
//! record leaves a token nobody can revoke; with the grace it dies by itself within seconds.
//!
//! OpenBao/Vault token auth method, <https://openbao.org/api-docs/auth/token/>:
//! - `POST auth/token/create`: `ttl` is the initial TTL, `explicit_max_ttl` a hard limit the token
//!   can never be renewed past, `renewable` whether it may be renewed at all.
//! - `POST auth/token/renew-accessor` (`accessor`, optional `increment`): renews the token with
//!   that accessor; its new TTL is `increment` from now, capped by the explicit max TTL (token
//!   concepts, "Token time-to-live, periodic tokens, and explicit max TTLs",
//!   <https://openbao.org/docs/concepts/tokens/>). The broker's token needs `update` on it.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{MAX_TOKEN_BYTES, VaultBackend};
use crate::backends::{Confirmation, Error};

/// How long a job's token is created to live, and whether it must be extended afterwards.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Lifetime {
    /// `ttl` at creation, in seconds.
    pub initial_seconds: u64,
    /// `explicit_max_ttl`: the role's granted TTL, which no renewal passes.
    pub max_seconds: u64,
    /// Whether the token starts within its grace and is extended once its accessor is recorded.
    pub extend: bool,
}

/// The lifetime of a token the role grants `ttl`: the grace first, unless the TTL is no longer
/// than the grace (then the token gets its TTL at once and needs no second call).
pub(super) fn lifetime(ttl: Duration, grace: Duration) -> Lifetime {
    let max_seconds = ttl.as_secs();
    if ttl <= grace {
        Lifetime { initial_seconds: max_seconds, max_seconds, extend: false }
    } else {
        Lifetime { initial_seconds: grace.as_secs(), max_seconds, extend: true }
    }
}

/// `auth/token/renew-accessor`'s body.
#[derive(Serialize)]
struct RenewAccessor<'a> {
    accessor: &'a str,
    increment: &'a str,
}

impl VaultBackend {
    /// Ends a token's grace: extends it to the whole TTL it was granted, by its accessor. Vault
    /// caps the increment at the token's explicit max TTL, counted from its creation, so the
    /// token expires when it would have without the grace.
    pub async fn extend(&self, accessor: &str, ttl: Duration, created: Instant) -> Result<(), Error> {
        // The rest of the TTL, rounded up: asking for more than is left is harmless (capped).
        let increment = format!("{}s", ttl.saturating_sub(created.elapsed()).as_secs() + 1);
        let body = &RenewAccessor { accessor, increment: &increment };
        self.login
            .with_token(|token| async move {
                self.post_as_broker(&self.renew_accessor, &token, body, MAX_TOKEN_BYTES).await
            })
            .await
            .map(|_| ())
    }

    /// What to do once the lease of a token with this lifetime is durable.
    pub(super) fn confirmation(
        accessor: &str,
        ttl: Duration,
        lifetime: &Lifetime,
        created: Instant,
    ) -> Option<Confirmation> {
        lifetime.extend.then(|| Confirmation::VaultExtend { accessor: accessor.to_owned(), ttl, created })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_ttl_longer_than_the_grace_starts_within_the_grace_and_is_extended() {
        let lifetime = lifetime(Duration::from_secs(900), Duration::from_secs(30));
        assert_eq!(lifetime, Lifetime { initial_seconds: 30, max_seconds: 900, extend: true });
    }

    #[test]
    fn a_role_ttl_within_the_grace_is_granted_at_once_without_extension() {
        let lifetime = lifetime(Duration::from_secs(20), Duration::from_secs(30));
        assert_eq!(lifetime, Lifetime { initial_seconds: 20, max_seconds: 20, extend: false });
        let equal = super::lifetime(Duration::from_secs(30), Duration::from_secs(30));
        assert!(!equal.extend);
    }
}
