//! Persistence the lifecycle relies on, by capability: replay records and leases.
//! SQLite is the embedded default.

mod lease;
mod sqlite;

pub use lease::{Lease, LeaseState, NewLease};
pub use sqlite::Store;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("the store is unavailable: {0}")]
    Unavailable(#[from] sqlx::Error),
    #[error("the store's schema could not be migrated: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("the store holds a record it cannot read: {0}")]
    Corrupt(String),
}
