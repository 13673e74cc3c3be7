//! A role's dynamic secret, read with the job's own token: OpenBao's database engine makes a
//! PostgreSQL login that works while the job runs and is gone once the job has ended.

use std::time::{Duration, Instant};

use ci_creds::backends::RevokeHandle;
use ci_creds::store::LeaseState;
use reqwest::Method;
use serde_json::json;
use sqlx::Connection;

use crate::support::bao::Bao;
use crate::support::postgres::{Postgres, SUPERUSER, SUPERUSER_PASSWORD};
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{fixture, github_token};

pub(crate) async fn configure_database_engine(bao: &Bao, postgres: &Postgres) {
    let (status, answer) = bao.root(Method::POST, "sys/mounts/database", Some(json!({"type": "database"}))).await;
    assert!(status < 300, "mount: {answer}");
    let connection = json!({
        "plugin_name": "postgresql-database-plugin",
        "connection_url": format!("postgresql://{{{{username}}}}:{{{{password}}}}@127.0.0.1:{}/postgres?sslmode=disable", postgres.port),
        "username": SUPERUSER,
        "password": SUPERUSER_PASSWORD,
        "allowed_roles": "readonly",
    });
    let (status, answer) = bao.root(Method::POST, "database/config/pg", Some(connection)).await;
    assert!(status < 300, "database config: {answer}");
    let role = json!({
        "db_name": "pg",
        "creation_statements": "CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';",
        "default_ttl": "1h",
    });
    let (status, answer) = bao.root(Method::POST, "database/roles/readonly", Some(role)).await;
    assert!(status < 300, "database role: {answer}");
    bao.put_policy("db-readonly", r#"path "database/creds/readonly" { capabilities = ["read"] }"#).await;
}

pub(crate) async fn can_log_in(port: u16, username: &str, password: &str) -> bool {
    let url = format!("postgres://{username}:{password}@127.0.0.1:{port}/postgres");
    match sqlx::PgConnection::connect(&url).await {
        Ok(mut connection) => sqlx::query("SELECT 1").execute(&mut connection).await.is_ok(),
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_login_dies_with_the_job() {
    let postgres = Postgres::start().await;
    let stack = Stack::start().await;
    configure_database_engine(&stack.bao, &postgres).await;

    let token = github_token(&stack.github, |_| {});
    let (status, answer) = stack.broker.exchange(&token, &json!({"roles": ["db-readonly"]})).await;
    assert_eq!(status, 200, "{answer}");
    let secret = &answer["credentials"][0]["vault"]["secret"];
    let (username, password) = (secret["username"].as_str().unwrap(), secret["password"].as_str().unwrap());
    assert!(can_log_in(postgres.port, username, password).await, "the login works while the job runs");
    assert!(!stack.broker.logs().contains(password), "the secret is never logged");

    let delivery = body(&fixture("github-workflow-job-completed.json"));
    let ended = Instant::now();
    let (status, _) = stack.broker.post("/v1/webhooks/github", &github_headers(&delivery, "d-1"), delivery).await;
    assert_eq!(status, 200);
    // Vault revokes a token's child leases asynchronously: allow a bounded wait.
    while can_log_in(postgres.port, username, password).await {
        assert!(ended.elapsed() < Duration::from_secs(30), "the login still works 30 s after the job ended");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("database login revoked {} ms after the completion webhook", ended.elapsed().as_millis());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_secret_fails_the_exchange_and_takes_the_token_back() {
    let stack = Stack::start().await;
    // No database engine is mounted: the read fails.
    stack.bao.put_policy("db-readonly", r#"path "database/creds/readonly" { capabilities = ["read"] }"#).await;
    let (status, answer) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({"roles": ["db-readonly"]})).await;
    assert!(status >= 500, "{answer}");
    let leases = stack.leases("github", "289782451").await;
    assert_eq!(leases[0].state, ci_creds::store::LeaseState::Failed);
}

/// All or nothing: a role that fails takes back the roles minted before it, and the roles after
/// it are never minted. Their leases, written together before any minting, say so.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_role_takes_back_the_roles_before_it_and_mints_none_after_it() {
    let stack = Stack::start().await;
    stack.bao.put_policy("db-readonly", r#"path "database/creds/readonly" { capabilities = ["read"] }"#).await;
    let token = github_token(&stack.github, |_| {});
    let roles = json!({"roles": ["read-config", "db-readonly", "deploy-prod"]});
    let (status, answer) = stack.broker.exchange(&token, &roles).await;
    assert!(status >= 500, "{answer}");

    let leases = stack.leases("github", "289782451").await;
    let state = |role: &str| leases.iter().find(|lease| lease.role == role).map(|lease| lease.state);
    assert_eq!(leases.len(), 3, "one lease per role, written before minting: {leases:?}");
    assert!(matches!(state("read-config"), Some(LeaseState::Revoking | LeaseState::Revoked)), "{leases:?}");
    assert_eq!(state("db-readonly"), Some(LeaseState::Failed), "its secret could not be read");
    assert_eq!(state("deploy-prod"), Some(LeaseState::Failed), "never minted: {leases:?}");
    let minted: Vec<String> = leases
        .iter()
        .filter_map(|lease| match &lease.handle {
            Some(RevokeHandle::Vault { accessor }) => Some(accessor.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(minted.len(), 1, "only read-config was minted: {leases:?}");
    stack.until_revoked(&minted, Duration::from_secs(10)).await;
    let (status, answer) = stack.broker.exchange(&token, &roles).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("token_replayed")), "{answer}");
}
