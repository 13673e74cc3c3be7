//! The store's schema: a database migrated by a newer ci-creds is refused at start with a clear
//! error, not used; the revocation queue's index holds what its claim reads; an upgrade that
//! rebuilds the leases keeps every one of them.

use ci_creds::backends::RevokeHandle;
use ci_creds::store::{Error, Lease, Store};
use sqlx::{Connection, Row};

use crate::support::postgres::Postgres;
use crate::support::store::migrated_before;

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

#[tokio::test]
async fn an_upgrade_keeps_every_lease_and_its_place_in_the_revocation_queue_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    an_upgrade_keeps_every_lease(&format!("sqlite://{}?mode=rwc", dir.path().join("store.db").display())).await;
}

#[tokio::test]
async fn an_upgrade_keeps_every_lease_and_its_place_in_the_revocation_queue_on_postgres() {
    let postgres = Postgres::start().await;
    postgres.create_database("ci_creds").await;
    an_upgrade_keeps_every_lease(&postgres.url("ci_creds")).await;
}

/// A store written by the release before the leases were rebuilt (migration 0009): every lease
/// is read back as it was, the one due for revocation is claimed, and a state no lease can have
/// is still refused.
async fn an_upgrade_keeps_every_lease(url: &str) {
    let mut connection = migrated_before(url, 9).await;
    let now = ci_creds::clock::now();
    let states = ["pending", "active", "revoking", "revoked", "expired", "failed"];
    for (n, state) in (0_i64..).zip(states) {
        let handle = (state != "pending")
            .then(|| serde_json::to_string(&RevokeHandle::Vault { accessor: format!("accessor-{n}") }).unwrap());
        sqlx::query(
            "INSERT INTO leases (id, issuer, job_id, role, backend, handle, state, created_at, expires_at, updated_at,
                 attempts, last_error, next_attempt_at, claimed_until, revoke_requested_at)
             VALUES ($1, 'github', $2, 'deploy', 'vault', $3, $4, $5, $6, $7, $8, $9, $10, 0, $11)",
        )
        .bind(format!("lease-{n}"))
        .bind(format!("job-{n}"))
        .bind(handle)
        .bind(state)
        .bind(now - 100 + n)
        .bind(now + 900 + n)
        .bind(now - 50 + n)
        .bind(n)
        .bind((n % 2 == 1).then(|| format!("attempt {n} failed")))
        .bind(n * 1000)
        .bind((n >= 2).then_some(now * 1000 + n))
        .execute(&mut connection)
        .await
        .unwrap();
    }
    connection.close().await.unwrap();

    let store = Store::connect(url).await.expect("migrates");
    let mut leases = store.leases(None, 100).await.unwrap();
    leases.sort_by(|a, b| a.id.cmp(&b.id));
    let expected: Vec<Lease> = (0_i64..)
        .zip(states)
        .map(|(n, state)| Lease {
            id: format!("lease-{n}"),
            issuer: "github".into(),
            job_id: format!("job-{n}"),
            role: "deploy".into(),
            backend: "vault".into(),
            handle: (state != "pending").then(|| RevokeHandle::Vault { accessor: format!("accessor-{n}") }),
            state: state.parse().unwrap(),
            expires_at: now + 900 + n,
            attempts: n,
            last_error: (n % 2 == 1).then(|| format!("attempt {n} failed")),
            revoke_requested_at: (n >= 2).then_some(now * 1000 + n),
            updated_at: now - 50 + n,
        })
        .collect();
    assert_eq!(leases, expected);

    let claimed = store.claim_revocations(10, 60_000).await.unwrap();
    assert_eq!(claimed.iter().map(|lease| lease.id.as_str()).collect::<Vec<_>>(), ["lease-2"]);

    let mut connection = sqlx::AnyConnection::connect(url).await.unwrap();
    let refused = sqlx::query(
        "INSERT INTO leases (id, issuer, job_id, role, backend, state, created_at, expires_at, updated_at)
         VALUES ('lease-x', 'github', 'job-x', 'deploy', 'vault', 'forgotten', 0, 0, 0)",
    )
    .execute(&mut connection)
    .await;
    assert!(refused.is_err(), "a lease in no known state is refused");
}
