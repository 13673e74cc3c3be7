//! The broker's own Vault login stays alive for a minute of exchanges, against a real OpenBao:
//! a renewable token of 10 s TTL is renewed; an AppRole login whose tokens live at most 15 s is
//! made again and again; and a job token minted before a new login still works after it (job
//! tokens are orphans of the token role). The first two take about a minute by nature. A
//! Kubernetes login reads the service account token again at each login, and a login token
//! Vault stops taking is replaced in the middle of an exchange.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::bao::Bao;
use crate::support::kubernetes::{CA_CERT, Kubernetes, NAMESPACE, SERVICE_ACCOUNT};
use crate::support::login_stack::{
    BROKER_POLICY, LoginStack, TOKEN_ROLE, bao_for_the_broker, broker_token, reads_its_secret,
};

/// How long each test keeps exchanging, and how often.
const MINUTE: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_secs(3);

/// Exchanges every few seconds for a minute, each a job's of its own, the last one at its end; all
/// must be granted. The last job token minted.
async fn exchange_for_a_minute(stack: &LoginStack) -> (String, String) {
    let started = Instant::now();
    let mut granted = 0;
    loop {
        let minted = stack.exchange_as_job(&format!("{}", 7100 + granted)).await.unwrap_or_else(|(status, answer)| {
            panic!(
                "exchange {} at {:?} answered {status} {answer}; broker log:\n{}",
                granted + 1,
                started.elapsed(),
                stack.broker.logs()
            )
        });
        granted += 1;
        let left = MINUTE.saturating_sub(started.elapsed());
        if left.is_zero() {
            assert!(granted >= 12, "{granted} exchanges in a minute");
            return minted;
        }
        tokio::time::sleep(EVERY.min(left)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_renewable_token_of_ten_seconds_keeps_exchanges_working_for_a_minute() {
    let bao = bao_for_the_broker().await;
    let (token, accessor) =
        broker_token(&bao, json!({ "ttl": "10s", "explicit_max_ttl": "30m", "renewable": true })).await;
    let stack =
        LoginStack::start(&bao, &format!("token_role = \"{TOKEN_ROLE}\"\n"), vec![("TEST_VAULT_TOKEN", token)]).await;

    let (job_token, _) = exchange_for_a_minute(&stack).await;
    assert!(reads_its_secret(&bao, &job_token).await, "the last job token reads its secret");
    let (_, lookup) = bao.lookup_accessor(&accessor).await;
    let ttl = lookup["data"]["ttl"].as_u64().expect("the broker's token is alive a minute after its first TTL");
    assert!(ttl > 0, "{lookup}");
    assert!(!stack.broker.logs().contains("cannot be renewed"), "a renewable token is not warned about");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approle_login_with_a_fifteen_second_max_ttl_keeps_exchanges_working_for_a_minute() {
    let bao = bao_for_the_broker().await;
    let (role_id, secret_id) = approle(&bao).await;
    let secrets = tempfile::tempdir().unwrap();
    let secret_id_file = secrets.path().join("secret-id");
    std::fs::write(&secret_id_file, format!("{secret_id}\n")).unwrap();
    let vault_lines = format!(
        "token_role = \"{TOKEN_ROLE}\"\n[vault.auth]\nmethod = \"approle\"\nrole_id_env = \"TEST_ROLE_ID\"\nsecret_id_file = \"{}\"\n",
        secret_id_file.display()
    );
    let stack = LoginStack::start(&bao, &vault_lines, vec![("TEST_ROLE_ID", role_id)]).await;

    let (first_job_token, first_accessor) = stack.exchange().await.expect("granted after the first login");
    let (job_token, _) = exchange_for_a_minute(&stack).await;
    assert!(reads_its_secret(&bao, &job_token).await, "the last job token reads its secret");
    let logs = stack.broker.logs();
    let logins = logs.matches("logged in to Vault").count();
    assert!(logins >= 4, "the broker logged in {logins} times in a minute of 15 s tokens");
    assert!(
        !logs.contains("Vault refused the broker's token"),
        "each login came before its token's max TTL, not after Vault refused it"
    );
    assert!(
        reads_its_secret(&bao, &first_job_token).await,
        "the first job token outlived the login token that minted it"
    );
    let (_, lookup) = bao.lookup_accessor(&first_accessor).await;
    assert_eq!(lookup["data"]["orphan"], true);
}

/// AppRole `ci-creds` on `approle/`, whose tokens hold only the shipped policy and live at most
/// 15 s: its role id and a secret id.
async fn approle(bao: &Bao) -> (String, String) {
    let ok = |what: &str, (status, answer): (u16, Value)| {
        assert!(status < 300, "{what}: HTTP {status} {answer}");
        answer
    };
    ok("enable approle", bao.root(Method::POST, "sys/auth/approle", Some(json!({ "type": "approle" }))).await);
    ok(
        "role",
        bao.root(
            Method::POST,
            "auth/approle/role/ci-creds",
            Some(json!({ "token_policies": [BROKER_POLICY], "token_no_default_policy": true, "token_max_ttl": "15s" })),
        )
        .await,
    );
    let role_id = ok("role id", bao.root(Method::GET, "auth/approle/role/ci-creds/role-id", None).await);
    let secret_id = ok("secret id", bao.root(Method::POST, "auth/approle/role/ci-creds/secret-id", None).await);
    (
        role_id["data"]["role_id"].as_str().unwrap().to_owned(),
        secret_id["data"]["secret_id"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kubernetes_login_revoked_in_vault_is_replaced_with_the_rotated_service_account_token() {
    let bao = bao_for_the_broker().await;
    let kubernetes = Kubernetes::start().await;
    let ok = |what: &str, (status, answer): (u16, Value)| assert!(status < 300, "{what}: HTTP {status} {answer}");
    ok("enable", bao.root(Method::POST, "sys/auth/kubernetes", Some(json!({ "type": "kubernetes" }))).await);
    let config =
        json!({ "kubernetes_host": kubernetes.url, "kubernetes_ca_cert": CA_CERT, "disable_local_ca_jwt": true });
    ok("config", bao.root(Method::POST, "auth/kubernetes/config", Some(config)).await);
    let role = json!({
        "bound_service_account_names": [SERVICE_ACCOUNT],
        "bound_service_account_namespaces": [NAMESPACE],
        "token_policies": [BROKER_POLICY],
        "token_no_default_policy": true,
        "token_ttl": "1h",
    });
    ok("role", bao.root(Method::POST, "auth/kubernetes/role/ci-creds", Some(role)).await);
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, kubernetes.rotate()).unwrap();
    let vault_lines = format!(
        "token_role = \"{TOKEN_ROLE}\"\n[vault.auth]\nmethod = \"kubernetes\"\nrole = \"ci-creds\"\ntoken_file = \"{}\"\n",
        token_file.display()
    );
    let stack = LoginStack::start(&bao, &vault_lines, Vec::new()).await;
    let (first_job_token, _) = stack.exchange().await.expect("granted after the first login");

    // The kubelet rotates the service account token; then the broker's Vault token is revoked.
    std::fs::write(&token_file, kubernetes.rotate()).unwrap();
    let login_accessor = accessor_of_login(&bao, "auth/kubernetes/login").await;
    ok(
        "revoke",
        bao.root(Method::POST, "auth/token/revoke-accessor", Some(json!({ "accessor": login_accessor }))).await,
    );

    let (job_token, _) = stack.exchange().await.unwrap_or_else(|(status, answer)| {
        panic!("the exchange after the revocation answered {status} {answer}; log:\n{}", stack.broker.logs())
    });
    assert!(reads_its_secret(&bao, &job_token).await);
    assert!(reads_its_secret(&bao, &first_job_token).await, "a job token outlives the login that minted it");
    assert!(stack.broker.logs().contains("Vault refused the broker's token; logging in again"));
    assert_ne!(accessor_of_login(&bao, "auth/kubernetes/login").await, login_accessor, "a new login");
}

/// The accessor of the one live token created by a login at `path`.
async fn accessor_of_login(bao: &Bao, path: &str) -> String {
    let list = Method::from_bytes(b"LIST").unwrap();
    let (status, answer) = bao.root(list, "auth/token/accessors", None).await;
    assert_eq!(status, 200, "{answer}");
    let mut found = Vec::new();
    for accessor in answer["data"]["keys"].as_array().unwrap() {
        let accessor = accessor.as_str().unwrap();
        let (_, lookup) = bao.lookup_accessor(accessor).await;
        if lookup["data"]["path"] == path {
            found.push(accessor.to_owned());
        }
    }
    assert_eq!(found.len(), 1, "live login tokens: {found:?}");
    found.remove(0)
}
