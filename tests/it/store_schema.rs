//! The store's schema: a database migrated by a newer ci-creds is refused at start with a clear
//! error, not used; the revocation queue's index holds what its claim reads.

use ci_creds::store::{Error, Store};
use sqlx::{Connection, Row};

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

/// Claiming due revocations searches the queue's index, which holds the leases being revoked and
/// no other: an exchange's pending and active leases cost it no write.
#[tokio::test]
async fn the_revocation_queue_is_an_index_of_the_leases_being_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("store.db").display());
    drop(Store::connect(&url).await.unwrap());

    let mut connection = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let index: String =
        sqlx::query_scalar("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'leases_queue'")
            .fetch_one(&mut connection)
            .await
            .unwrap();
    assert!(index.ends_with("WHERE state = 'revoking'"), "{index}");
    let plan: Vec<String> = sqlx::query(
        "EXPLAIN QUERY PLAN SELECT id FROM leases
         WHERE state = 'revoking' AND handle IS NOT NULL AND next_attempt_at <= 5 AND claimed_until <= 5
         ORDER BY next_attempt_at LIMIT 10",
    )
    .fetch_all(&mut connection)
    .await
    .unwrap()
    .iter()
    .map(|step| step.get("detail"))
    .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("USING INDEX leases_queue"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "due revocations come in order from the index: {plan}");
}
