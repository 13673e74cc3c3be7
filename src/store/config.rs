//! `[store]` in the broker's config: which database, and the limits of its pool.

use serde::Deserialize;

use super::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// Embedded, one broker process per database file.
    Sqlite,
    /// Shared by several broker replicas.
    Postgres,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite://PATH` (created if missing) or `postgres://USER@HOST:PORT/DB`.
    pub url: String,
    /// The env var holding the PostgreSQL password, so it stays out of the config file.
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default)]
    pub max_connections: Option<u32>,
    /// How long a request waits for a free connection before failing with 503.
    #[serde(default = "default_acquire_timeout_seconds")]
    pub acquire_timeout_seconds: u64,
    /// PostgreSQL: the longest any statement may run.
    #[serde(default = "default_statement_timeout_seconds")]
    pub statement_timeout_seconds: u64,
}

fn default_acquire_timeout_seconds() -> u64 {
    5
}

fn default_statement_timeout_seconds() -> u64 {
    5
}

impl StoreConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            password_env: None,
            max_connections: None,
            acquire_timeout_seconds: default_acquire_timeout_seconds(),
            statement_timeout_seconds: default_statement_timeout_seconds(),
        }
    }

    pub fn kind(&self) -> Result<StoreKind, Error> {
        if self.url.starts_with("sqlite:") {
            Ok(StoreKind::Sqlite)
        } else if self.url.starts_with("postgres://") || self.url.starts_with("postgresql://") {
            Ok(StoreKind::Postgres)
        } else {
            Err(Error::Config("`store.url` must be sqlite://PATH or postgres://…".into()))
        }
    }
}
