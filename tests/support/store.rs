//! A store under test, on an SQLite file or a throw-away PostgreSQL cluster.

use ci_creds::backends::RevokeHandle;
use ci_creds::store::{NewLease, Store};

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

/// A lease of job `job_id` that spends no token.
pub fn lease<'a>(id: &'a str, job_id: &'a str, expires_at: i64) -> NewLease<'a> {
    NewLease {
        id,
        issuer: "github",
        job_id,
        repository: "octo-org/octo-repo",
        role: "deploy",
        backend: "vault",
        expires_at,
        job_keep_until: expires_at + 3600,
        spends: None,
    }
}

pub fn handle(accessor: &str) -> RevokeHandle {
    RevokeHandle::Vault { accessor: accessor.into() }
}
