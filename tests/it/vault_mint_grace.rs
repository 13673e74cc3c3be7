//! A job's Vault token lives only the mint grace until the broker has recorded its accessor,
//! then its role's whole TTL: a token created just before a crash dies within seconds, with the
//! dynamic secret read with it; one the broker cannot extend is never handed out.

use std::time::{Duration, Instant};

use ci_creds::backends::vault::{VaultBackend, VaultConfig};
use ci_creds::backends::{Backend, Backends, MintRequest, Minted};
use ci_creds::ci::Job;
use ci_creds::net::HttpClient;
use ci_creds::policy::VaultScope;
use ci_creds::store::LeaseState;
use reqwest::Method;
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::support::bao::{Bao, ROOT_TOKEN};
use crate::support::github_token;
use crate::support::postgres::Postgres;
use crate::support::stack::Stack;
use crate::vault_dynamic_secret::{can_log_in, configure_database_engine};

const GRACE_SECONDS: u64 = 3;
const CONFIG: &str = "[vault]\nmint_grace_seconds = 3\n";
const GITHUB_JOB: &str = "289782451";

fn backend(bao: &Bao) -> Backends {
    let config = VaultConfig {
        address: bao.address.clone(),
        token_env: "UNUSED".into(),
        timeout_seconds: 2,
        mint_grace_seconds: GRACE_SECONDS,
        token_role: None,
        auth: Default::default(),
    };
    let vault = VaultBackend::new(&config, &SecretString::from(ROOT_TOKEN), HttpClient::new().unwrap()).unwrap();
    Backends { vault: Some(vault), ..Backends::default() }
}

async fn mint(backends: &Backends, scope: &VaultScope, ttl: Duration) -> Minted {
    let job =
        Job { issuer: "github".into(), job_id: "7".into(), repository: "octo-org/octo-repo".into(), ..Job::default() };
    let request = MintRequest { job: &job, role: "deploy-prod", scope, ttl, bind: None };
    backends.vault().unwrap().mint(request).await.expect("minted")
}

fn accessor(minted: &Minted) -> &str {
    match &minted.handle {
        ci_creds::backends::RevokeHandle::Vault { accessor } => accessor,
        other => panic!("not a Vault handle: {other:?}"),
    }
}

/// The token's `data` as `lookup-accessor` shows it.
async fn lookup(bao: &Bao, accessor: &str) -> Value {
    let (status, answer) = bao.lookup_accessor(accessor).await;
    assert_eq!(status, 200, "{answer}");
    answer["data"].clone()
}

/// Waits until the token of `accessor` is gone; fails after `limit`.
async fn until_gone(bao: &Bao, accessor: &str, limit: Duration) {
    let started = Instant::now();
    while bao.accessor_alive(accessor).await {
        assert!(started.elapsed() < limit, "the token still lives after {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_never_confirmed_dies_within_the_grace_and_a_confirmed_one_lives_its_ttl() {
    let bao = Bao::start().await;
    let backends = backend(&bao);
    let scope = VaultScope { policies: vec!["default".into()], secret_path: None };

    let unconfirmed = mint(&backends, &scope, Duration::from_secs(900)).await;
    let data = lookup(&bao, accessor(&unconfirmed)).await;
    assert!(data["ttl"].as_u64().unwrap() <= GRACE_SECONDS, "created within its grace: {data}");
    assert_eq!(data["explicit_max_ttl"], json!(900), "the role's TTL is its hard limit");
    assert_eq!(data["renewable"], json!(true));

    let confirmed = mint(&backends, &scope, Duration::from_secs(900)).await;
    backends.confirm(confirmed.confirmation.as_ref().expect("a token with a grace needs confirming")).await.unwrap();
    let data = lookup(&bao, accessor(&confirmed)).await;
    assert!(data["ttl"].as_u64().unwrap() > 800, "extended to the role's TTL: {data}");

    // As after a crash between the token's creation and its lease's activation.
    until_gone(&bao, accessor(&unconfirmed), Duration::from_secs(GRACE_SECONDS + 20)).await;
    assert!(bao.accessor_alive(accessor(&confirmed)).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_ttl_within_the_grace_is_granted_at_once() {
    let bao = Bao::start().await;
    let backends = backend(&bao);
    let scope = VaultScope { policies: vec!["default".into()], secret_path: None };

    let minted = mint(&backends, &scope, Duration::from_secs(60 * 60)).await;
    assert!(minted.confirmation.is_some());
    let short = mint(&backends, &scope, Duration::from_secs(GRACE_SECONDS)).await;
    assert!(short.confirmation.is_none(), "nothing to extend: one Vault call");
    let data = lookup(&bao, accessor(&short)).await;
    assert_eq!((data["explicit_max_ttl"].as_u64(), data["renewable"].as_bool()), (Some(GRACE_SECONDS), Some(false)));
}

/// A dynamic secret's lease is a child of the token that read it: when an unconfirmed token
/// dies at the end of its grace, Vault revokes the secret with it.
#[tokio::test(flavor = "multi_thread")]
async fn a_dynamic_secret_read_with_an_unconfirmed_token_dies_with_it() {
    let postgres = Postgres::start().await;
    let bao = Bao::start().await;
    configure_database_engine(&bao, &postgres).await;
    let backends = backend(&bao);
    let scope =
        VaultScope { policies: vec!["db-readonly".into()], secret_path: Some("database/creds/readonly".into()) };

    let minted = mint(&backends, &scope, Duration::from_secs(900)).await;
    let ci_creds::backends::Credential::Vault { secret: Some(secret), .. } = &minted.credential else {
        panic!("no secret read")
    };
    let secret: Value = serde_json::from_str(secrecy::ExposeSecret::expose_secret(secret)).unwrap();
    let (username, password) = (secret["username"].as_str().unwrap(), secret["password"].as_str().unwrap());
    assert!(can_log_in(postgres.port, username, password).await, "the login works within the grace");

    until_gone(&bao, accessor(&minted), Duration::from_secs(GRACE_SECONDS + 20)).await;
    let started = Instant::now();
    while can_log_in(postgres.port, username, password).await {
        assert!(started.elapsed() < Duration::from_secs(20), "the login outlived its token");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exchange_extends_its_token_once_the_lease_is_active() {
    let stack = Stack::start_with_config(CONFIG).await;
    let accessors = stack.accessors(&github_token(&stack.github, |_| {}), &["deploy-prod"]).await;
    let data = lookup(&stack.bao, &accessors[0]).await;
    assert!(data["ttl"].as_u64().unwrap() > 800, "deploy-prod's 15 minutes: {data}");
    assert_eq!(data["explicit_max_ttl"], json!(900));
    let leases = stack.leases("github", GITHUB_JOB).await;
    assert_eq!(leases[0].state, LeaseState::Active);
}

/// A broker whose Vault policy lacks `auth/token/renew-accessor` can create the job's token but
/// not extend it: the exchange fails, and the token is revoked rather than left to die unseen.
#[tokio::test(flavor = "multi_thread")]
async fn a_token_that_cannot_be_extended_is_revoked_and_the_exchange_fails() {
    let mut stack = Stack::start_with_config(CONFIG).await;
    stack
        .bao
        .put_policy(
            "broker-without-renew",
            r#"
path "auth/token/create" { capabilities = ["create", "update", "sudo"] }
path "auth/token/revoke-accessor" { capabilities = ["update"] }
"#,
        )
        .await;
    let (status, created) = stack
        .bao
        .root(Method::POST, "auth/token/create", Some(json!({ "policies": ["broker-without-renew"], "ttl": "1h" })))
        .await;
    assert_eq!(status, 200, "{created}");
    stack.broker.stop();
    stack.broker.set_env("TEST_VAULT_TOKEN", created["auth"]["client_token"].as_str().unwrap());
    stack.broker.spawn().await;

    let (status, answer) =
        stack.broker.exchange(&github_token(&stack.github, |_| {}), &json!({ "roles": ["deploy-prod"] })).await;
    assert_eq!((status, answer["error"].as_str()), (502, Some("backend_refused")), "{answer}");
    assert!(answer.get("credentials").is_none());
    crate::support::wait_until("the unextended token's revocation", || async {
        let leases = stack.leases("github", GITHUB_JOB).await;
        leases.len() == 1 && leases[0].state == LeaseState::Revoked
    })
    .await;
    let alive = stack.bao.job_tokens().await;
    assert!(alive.iter().all(|(_, meta)| meta["job_id"] != json!(GITHUB_JOB)), "{alive:?}");
}
