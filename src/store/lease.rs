use std::fmt;
use std::str::FromStr;

use crate::backends::RevokeHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseState {
    /// Recorded before the backend is asked; a credential may or may not exist.
    Pending,
    Active,
    /// Revocation is wanted and not yet confirmed by the backend.
    Revoking,
    Revoked,
    Expired,
    /// Minting failed; no credential exists.
    Failed,
}

impl LeaseState {
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
        [
            Self::Pending,
            Self::Active,
            Self::Revoking,
            Self::Revoked,
            Self::Expired,
            Self::Failed,
        ]
        .into_iter()
        .find(|state| state.as_str() == s)
        .ok_or_else(|| format!("unknown lease state `{s}`"))
    }
}

/// A lease about to be minted.
#[derive(Clone, Debug)]
pub struct NewLease<'a> {
    pub id: &'a str,
    pub issuer: &'a str,
    pub job_id: &'a str,
    pub role: &'a str,
    pub backend: &'a str,
    /// Unix seconds.
    pub expires_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub id: String,
    pub issuer: String,
    pub job_id: String,
    pub role: String,
    pub backend: String,
    pub handle: Option<RevokeHandle>,
    pub state: LeaseState,
    pub expires_at: i64,
}
