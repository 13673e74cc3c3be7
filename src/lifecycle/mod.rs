//! The job and lease lifecycle: exchanging a verified job token for credentials.

mod exchange;
pub mod sweeper;

pub use exchange::{Broker, ExchangeRequest, Exchanged, IssuedCredential};

use thiserror::Error;

use crate::policy::RoleDenial;
use crate::{backends, identity, store};

#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    InvalidRequest(String),
    #[error(transparent)]
    Identity(#[from] identity::Error),
    #[error("the policy does not allow every requested role")]
    Denied(Vec<RoleDenial>),
    #[error("this token was already exchanged; request a fresh token from the CI system")]
    Replayed,
    #[error(transparent)]
    Backend(#[from] backends::Error),
    #[error(transparent)]
    Store(#[from] store::Error),
}
