//! A store under test, on an SQLite file or a throw-away PostgreSQL cluster.

use ci_creds::backends::RevokeHandle;
use ci_creds::store::{NewLease, NewLeases, Store};

use super::postgres::Postgres;

/// A store under test, the URL to open it again, and what keeps its database alive.
pub struct Subject {
    pub store: Store,
    pub url: String,
    _database: Box<dyn std::any::Any + Send>,
}

pub async fn sqlite() -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    let store = Store::connect(&url).await.expect("creates the database");
    Subject { store, url, _database: Box::new(dir) }
}

pub async fn postgres() -> Subject {
    let postgres = Postgres::start().await;
    postgres.create_database("ci_creds").await;
    let url = postgres.url("ci_creds");
    let store = Store::connect(&url).await.expect("migrates the database");
    Subject { store, url, _database: Box::new(postgres) }
}

/// A connection to the database at `url`, migrated as the release before `version` left it: for
/// upgrade tests, which write what that release wrote and then open the store.
pub async fn migrated_before(url: &str, version: i64) -> sqlx::AnyConnection {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut before = sqlx::migrate!("./migrations");
    before.migrations = before.migrations.iter().filter(|migration| migration.version < version).cloned().collect();
    let mut connection = sqlx::AnyConnection::connect(url).await.unwrap();
    before.run(&mut connection).await.unwrap();
    connection
}

/// An exchange of job `job_id` that begins one lease and spends no token.
pub fn lease(id: &str, job_id: &str, expires_at: i64) -> NewLeases {
    NewLeases {
        issuer: "github".into(),
        job_id: job_id.into(),
        repository: "octo-org/octo-repo".into(),
        job_keep_until: expires_at + 3600,
        spends: None,
        leases: vec![NewLease {
            id: id.into(),
            role: "deploy".into(),
            backend: "vault".into(),
            expires_at,
            max_per_job: 0,
            bound_to: None,
        }],
        ci: Default::default(),
        address: None,
    }
}

pub fn handle(accessor: &str) -> RevokeHandle {
    RevokeHandle::Vault { accessor: accessor.into() }
}

/// Runs each named `async fn(Subject)` of the calling module on SQLite and on PostgreSQL; the
/// caller imports `sqlite` and `postgres`.
// The benches share this support code and run no store suite.
#[allow(unused_macros)]
macro_rules! on_every_store {
    ($($test:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[tokio::test(flavor = "multi_thread")]
            async fn $test() {
                super::$test(super::sqlite().await).await;
            })*
        }
        mod on_postgres {
            $(#[tokio::test(flavor = "multi_thread")]
            async fn $test() {
                super::$test(super::postgres().await).await;
            })*
        }
    };
}

#[allow(unused_imports)]
pub(crate) use on_every_store;
