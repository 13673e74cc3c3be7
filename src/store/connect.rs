//! Opening the store: pool limits, per-connection settings, migrations.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::MigrateError;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyConnection, Connection, Executor};

use super::group_commit::GroupCommit;
use super::write_connection::Writers;
use super::{Error, Store, StoreConfig, StoreKind, sqlite_batch, sqlite_checkpoint};

pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Store {
    /// Opens and migrates the store at `url` with default limits.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::open(&StoreConfig::new(url), None).await
    }

    /// Opens the store, applies pending migrations, and refuses a schema newer than this build.
    pub async fn open(config: &StoreConfig, password: Option<&SecretString>) -> Result<Self, Error> {
        sqlx::any::install_default_drivers();
        let kind = config.kind()?;
        let url = connection_url(config, kind, password)?;
        let options = AnyConnectOptions::from_str(&url)?;
        let pool = pool_options(config, kind).connect_with(options.clone()).await?;
        if kind == StoreKind::Sqlite {
            // Persistent in the file: readers never block the writer.
            let mut connection = pool.acquire().await?;
            connection.execute("PRAGMA journal_mode = WAL").await?;
            connection.ping().await?;
        }
        // On a connection of its own, without the pool's statement timeout: a migration that
        // counts what the store already holds (0008) may take longer than any exchange may.
        let mut migrating = AnyConnection::connect_with(&options).await?;
        MIGRATOR.run(&mut migrating).await.map_err(|error| match error {
            MigrateError::VersionMissing(version) => Error::NewerSchema(version),
            other => Error::Migrate(other),
        })?;
        migrating.close().await?;
        let (writers, sqlite_batches) = match kind {
            StoreKind::Sqlite => {
                let settings = connection_settings(config, kind);
                let mut connection = AnyConnection::connect_with(&options).await?;
                connection.execute(settings.as_str()).await?;
                let wait = Duration::from_secs(config.acquire_timeout_seconds);
                (
                    Writers::kept(pool.clone(), connection, wait),
                    Some(sqlite_batch::open(&sqlite_file(&url)?, &settings)?),
                )
            }
            StoreKind::Postgres => (Writers::pooled(pool.clone()), None),
        };
        let group_commit = GroupCommit::start(writers.clone(), sqlite_batches)?;
        Ok(Self { pool, writers, group_commit, kind })
    }
}

/// What every connection sets first.
fn connection_settings(config: &StoreConfig, kind: StoreKind) -> String {
    match kind {
        StoreKind::Sqlite => format!(
            "PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = {};",
            sqlite_checkpoint::FALLBACK_PAGES
        ),
        StoreKind::Postgres => format!("SET statement_timeout = '{}s'", config.statement_timeout_seconds),
    }
}

/// Pool limits and per-connection settings for `kind`.
fn pool_options(config: &StoreConfig, kind: StoreKind) -> AnyPoolOptions {
    let settings = connection_settings(config, kind);
    AnyPoolOptions::new()
        .max_connections(config.max_connections.unwrap_or(match kind {
            StoreKind::Sqlite => 8,
            StoreKind::Postgres => 16,
        }))
        .acquire_timeout(Duration::from_secs(config.acquire_timeout_seconds))
        // A PostgreSQL connection can die while idle (server restart, network), so it is checked
        // before use. An SQLite one is an in-process file handle that nothing closes while idle,
        // and sqlx already checks every connection when it is released: a second check on
        // acquire only adds a round trip to the connection's worker thread to every query.
        .test_before_acquire(kind == StoreKind::Postgres)
        .after_connect(move |connection, _| {
            let settings = settings.clone();
            Box::pin(async move {
                connection.execute(settings.as_str()).await?;
                Ok(())
            })
        })
}

/// The SQLite database file `url` names. A database in memory exists for one connection only,
/// and the store needs several.
fn sqlite_file(url: &str) -> Result<PathBuf, Error> {
    if url.contains(":memory:") || url.contains("mode=memory") {
        return Err(Error::Config("`store.url` must name an SQLite file, not a database in memory".into()));
    }
    Ok(SqliteConnectOptions::from_str(url)?.get_filename().to_owned())
}

pub(super) fn connection_url(
    config: &StoreConfig,
    kind: StoreKind,
    password: Option<&SecretString>,
) -> Result<String, Error> {
    match kind {
        StoreKind::Sqlite if config.url.contains("mode=") => Ok(config.url.clone()),
        StoreKind::Sqlite => {
            let separator = if config.url.contains('?') { '&' } else { '?' };
            Ok(format!("{}{separator}mode=rwc", config.url))
        }
        StoreKind::Postgres => {
            let Some(password) = password else { return Ok(config.url.clone()) };
            let mut url = url::Url::parse(&config.url).map_err(|e| Error::Config(format!("`store.url`: {e}")))?;
            url.set_password(Some(password.expose_secret()))
                .map_err(|_| Error::Config("`store.url` cannot carry a password".into()))?;
            Ok(url.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_postgres_connections_before_use_but_not_sqlite_file_handles() {
        let sqlite = pool_options(&StoreConfig::new("sqlite://ci-creds.db"), StoreKind::Sqlite);
        let postgres = pool_options(&StoreConfig::new("postgres://ci-creds@db/ci_creds"), StoreKind::Postgres);
        assert!(!sqlite.get_test_before_acquire(), "an SQLite query would pay an extra worker round trip");
        assert!(postgres.get_test_before_acquire(), "a PostgreSQL connection dropped while idle would fail a request");
    }

    #[test]
    fn the_group_commit_opens_the_file_the_store_names_and_refuses_a_database_in_memory() {
        let file = sqlite_file("sqlite:///var/lib/ci-creds/store.db?mode=rwc").unwrap();
        assert_eq!(file, PathBuf::from("/var/lib/ci-creds/store.db"));
        for url in ["sqlite::memory:", "sqlite://store.db?mode=memory"] {
            assert!(matches!(sqlite_file(url), Err(Error::Config(_))), "{url}");
        }
    }
}
