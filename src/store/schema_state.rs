//! Which schema version a store is at, read without migrating or creating anything: what
//! `ci-creds check` reports before a broker is started on it.

use std::str::FromStr;
use std::time::Duration;

use secrecy::SecretString;
use sqlx::any::AnyConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyConnection, Connection};

use super::connect::{MIGRATOR, connection_url};
use super::{Error, StoreConfig, StoreKind};

/// The schema a store is at, and the one this build migrates it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaState {
    /// The highest migration applied successfully; 0 for a database never migrated, `None` for an
    /// SQLite file that does not exist yet (`serve` creates it).
    pub applied: Option<i64>,
    pub latest: i64,
}

/// Connects once (within the store's `acquire_timeout_seconds`) and reads sqlx's migrations
/// table; an SQLite file is opened read-only, so nothing is created.
pub async fn schema_state(config: &StoreConfig, password: Option<&SecretString>) -> Result<SchemaState, Error> {
    sqlx::any::install_default_drivers();
    let latest = MIGRATOR.iter().map(|migration| migration.version).max().unwrap_or(0);
    let kind = config.kind()?;
    let url = match kind {
        StoreKind::Sqlite => {
            let file = SqliteConnectOptions::from_str(&config.url)?.get_filename().to_owned();
            if !file.exists() {
                let folder = file.parent().filter(|folder| !folder.as_os_str().is_empty());
                if folder.is_some_and(|folder| !folder.is_dir()) {
                    return Err(Error::Config(format!("the folder of {} does not exist", file.display())));
                }
                return Ok(SchemaState { applied: None, latest });
            }
            let (path, _) = config.url.split_once('?').unwrap_or((&config.url, ""));
            format!("{path}?mode=ro")
        }
        StoreKind::Postgres => connection_url(config, kind, password)?,
    };
    let wait = Duration::from_secs(config.acquire_timeout_seconds.max(1));
    let options = AnyConnectOptions::from_str(&url)?;
    let mut connection = tokio::time::timeout(wait, AnyConnection::connect_with(&options))
        .await
        .map_err(|_| Error::Config(format!("no connection within {} s", wait.as_secs())))??;
    let table_count = match kind {
        StoreKind::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        StoreKind::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
        }
    };
    let tables: i64 = sqlx::query_scalar(table_count).fetch_one(&mut connection).await?;
    let applied = if tables == 0 {
        0
    } else {
        sqlx::query_scalar::<_, i64>("SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success = TRUE")
            .fetch_one(&mut connection)
            .await?
    };
    connection.close().await?;
    Ok(SchemaState { applied: Some(applied), latest })
}
