//! What the store keeps of a lease: its state, the records an exchange writes, and a lease as read
//! back.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::backends::RevokeHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaseState {
    /// Recorded before the backend is asked; a credential may or may not exist.
    Pending,
    Active,
    /// Revocation is wanted and not yet confirmed by the backend: the durable queue.
    Revoking,
    Revoked,
    Expired,
    /// Minting failed; no credential exists.
    Failed,
}

impl LeaseState {
    /// Every state, as metrics list them.
    pub const ALL: [LeaseState; 6] = [
        LeaseState::Pending,
        LeaseState::Active,
        LeaseState::Revoking,
        LeaseState::Revoked,
        LeaseState::Expired,
        LeaseState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Active => "active",
            Self::Revoking => "revoking",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
            Self::Failed => "failed",
        }
    }
}

impl fmt::Display for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for LeaseState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|state| state.as_str() == s).ok_or_else(|| format!("unknown lease state `{s}`"))
    }
}

/// What an exchange writes before it asks any backend, in one transaction: the token it spends,
/// its job as seen, and one pending lease per granted role. Nothing of it is written if the token
/// was exchanged before or the job has ended; refused at a role's cap, only the job's record as
/// seen is (with the address that asked).
#[derive(Clone, Debug)]
pub struct NewLeases {
    pub issuer: String,
    pub job_id: String,
    pub repository: String,
    /// Unix seconds until which the job's record must be kept (beyond its token's expiry).
    pub job_keep_until: i64,
    /// The exchange's token: the replay check and the intent to mint commit together or not at all.
    pub spends: Option<SpentToken>,
    pub leases: Vec<NewLease>,
    /// What the exchange learnt of the job for its CI's API.
    pub ci: JobCiFacts,
    /// The address the exchange came from, kept on the job (the latest exchange's wins).
    pub address: Option<String>,
}

/// Kept with a job for the reconciler: where the CI's API answers for it, when it was last
/// asked, and the runner it named.
#[derive(Clone, Debug, Default)]
pub struct JobCiFacts {
    /// A `JobLocator` as JSON.
    pub locator: Option<String>,
    /// Unix milliseconds; 0 when the exchange did not ask.
    pub asked_at_ms: i64,
    /// `RunnerFacts` as JSON.
    pub runner: Option<String>,
}

/// A lease about to be minted.
#[derive(Clone, Debug)]
pub struct NewLease {
    pub id: String,
    pub role: String,
    pub backend: String,
    /// Unix seconds.
    pub expires_at: i64,
    /// The most leases of this role one job may have (`max_exchanges_per_job`); 0 is no cap.
    /// Every lease of the role counts, whatever its state: each exchange writes one.
    pub max_per_job: u32,
    /// The address block the credential is bound to (`a.b.c.d/n`), for a role with
    /// `bind_to_address`.
    pub bound_to: Option<String>,
}

/// A token an exchange spends: its issuer is the job's.
#[derive(Clone, Debug)]
pub struct SpentToken {
    pub token_id: String,
    /// Another id the same token is spent under in the same transaction, and refused if already
    /// spent under: `Job::legacy_token_id`.
    pub legacy_id: Option<String>,
    /// Unix seconds; the record is kept until then, as the token can be replayed until then.
    pub expires_at: i64,
}

impl SpentToken {
    /// Every id the token is spent under; it is a replay if any of them was spent before.
    pub(super) fn ids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.token_id.as_str()).chain(self.legacy_id.as_deref())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseBegun {
    Begun,
    /// The token was exchanged before: nothing was written, but for its other ids being spent
    /// too (each names the same signed token, so each is truly spent).
    Replayed,
    /// The job has ended: nothing may be minted for it.
    JobEnded,
    /// The job already has `max_per_job` leases of `role`: no lease was written and the token
    /// stays unspent.
    CapReached {
        role: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lease {
    pub id: String,
    pub issuer: String,
    pub job_id: String,
    pub role: String,
    pub backend: String,
    pub handle: Option<RevokeHandle>,
    pub state: LeaseState,
    /// Unix seconds.
    pub expires_at: i64,
    pub attempts: i64,
    pub last_error: Option<String>,
    /// Unix milliseconds when the job's end was recorded.
    pub revoke_requested_at: Option<i64>,
    /// Unix seconds of the last change.
    pub updated_at: i64,
}
