//! A database migrated by a newer ci-creds is refused at start with a clear error, not used.

use ci_creds::store::{Error, Store};
use sqlx::Connection;

#[tokio::test]
async fn refuses_a_database_at_a_newer_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    drop(Store::connect(&url).await.expect("a new database is created and migrated"));

    let mut connection = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (99990101000000, 'from a newer release', TRUE, X'00', 1)",
    )
    .execute(&mut connection)
    .await
    .unwrap();
    connection.close().await.unwrap();

    let error = Store::connect(&url).await.err().expect("refused");
    assert!(matches!(error, Error::NewerSchema(99990101000000)), "{error:?}");
    assert!(error.to_string().contains("newer ci-creds"), "{error}");
}
