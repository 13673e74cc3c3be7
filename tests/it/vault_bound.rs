//! Vault tokens bound to the job's address (`bind_to_address`), end to end against a real
//! OpenBao on loopback: the broker's token holds only the shipped policy, the exchange comes
//! from 127.0.0.5 (as the HTTP layer would tell it), and the job's token is then used from
//! 127.0.0.5 and from 127.0.0.6. Linux routes all of 127/8 to `lo`, so OpenBao on 127.0.0.1
//! sees each request's own source address.

use ci_creds::backends::Credential;
use ci_creds::lifecycle::sweeper::sweep;
use ci_creds::lifecycle::{Error, ExchangeRequest, Exchanged};
use reqwest::Method;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use crate::support::in_process::{self, InProcess};
use crate::support::login_stack::{TOKEN_ROLE, bao_for_the_broker, broker_token};
use crate::support::{bao::Bao, github_token, start_issuer};

const POLICY: &str = r#"
roles:
  - name: read-config
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow: [ { issuer: github, repository_id: "74" } ]
  - name: read-config-bound
    backend: vault
    max_ttl: 5m
    bind_to_address: true
    vault: { policies: [read-config] }
    allow: [ { issuer: github, repository_id: "74" } ]
  - name: read-config-pool
    backend: vault
    max_ttl: 5m
    bind_to_address: true
    bind_prefix: 24
    vault: { policies: [read-config] }
    allow: [ { issuer: github, repository_id: "74" } ]
"#;

struct Setup {
    bao: Bao,
    issuer: std::sync::Arc<ci_creds::dev::DevIssuer>,
    broker: InProcess,
}

/// OpenBao prepared as `docs/vault.md` says, with the broker's token holding only the shipped
/// policy, and the broker in this process.
async fn setup() -> Setup {
    let bao = bao_for_the_broker().await;
    let (token, _) = broker_token(&bao, json!({ "ttl": "1h", "renewable": true })).await;
    let issuer = start_issuer().await;
    let broker = in_process::broker(issuer.url(), POLICY, &bao, &token, Some(TOKEN_ROLE)).await;
    Setup { bao, issuer, broker }
}

fn request(role: &str, address: Option<&str>) -> ExchangeRequest {
    ExchangeRequest {
        roles: vec![role.to_owned()],
        ttl: None,
        job: None,
        address: address.map(|address| address.parse().expect("an address")),
    }
}

/// A job's exchange for `role` from `address`, with a fresh token of the fixture's job (or the
/// job `job_id`).
async fn exchange(setup: &Setup, role: &str, address: &str, job_id: &str) -> Exchanged {
    let token = github_token(&setup.issuer, |claims| claims["check_run_id"] = json!(job_id));
    setup.broker.exchange.exchange(&token, request(role, Some(address))).await.expect("granted")
}

fn vault_token(exchanged: &Exchanged) -> (String, String) {
    match &exchanged.credentials[0].credential {
        Credential::Vault { token, accessor, .. } => (token.expose_secret().to_owned(), accessor.clone()),
        other => panic!("not a Vault credential: {other:?}"),
    }
}

/// The audit event `credential.minted` of `lease_id`.
async fn minted_event(setup: &Setup, lease_id: &str) -> Value {
    let mut found = None;
    crate::support::wait_until("the credential.minted event", || {
        found = setup
            .broker
            .audit_events()
            .into_iter()
            .find(|event| event["event"] == "credential.minted" && event["lease_id"] == lease_id);
        std::future::ready(found.is_some())
    })
    .await;
    found.unwrap_or_default()
}

/// The token roles the broker made for address blocks.
async fn bound_roles(bao: &Bao) -> Vec<String> {
    let (status, listed) = bao.root(Method::GET, "auth/token/roles?list=true", None).await;
    assert_eq!(status, 200, "{listed}");
    let mut roles: Vec<String> = listed["data"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|role| role.starts_with(&format!("{TOKEN_ROLE}-bound-")))
        .map(str::to_owned)
        .collect();
    roles.sort();
    roles
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_token_reads_its_secret_from_the_jobs_address_and_nowhere_else() {
    let setup = setup().await;
    let exchanged = exchange(&setup, "read-config-bound", "127.0.0.5", "289782451").await;
    assert_eq!(exchanged.credentials[0].bound_to.map(|block| block.to_string()).as_deref(), Some("127.0.0.5/32"));
    let (token, accessor) = vault_token(&exchanged);
    let minted = minted_event(&setup, &exchanged.credentials[0].lease_id).await;
    assert_eq!(minted["bound_to"], "127.0.0.5/32", "{minted}");

    let (status, secret) = setup.bao.read_secret_from(&token, "127.0.0.5").await;
    assert_eq!(status, 200, "{secret}");
    assert_eq!(secret["data"]["data"]["colour"], "blue");
    let (status, refused) = setup.bao.read_secret_from(&token, "127.0.0.6").await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused.to_string().contains("permission denied"), "{refused}");

    let (_, lookup) = setup.bao.lookup_accessor(&accessor).await;
    let data = &lookup["data"];
    assert_eq!(data["role"], format!("{TOKEN_ROLE}-bound-127-0-0-5-32"));
    assert_eq!(data["policies"], json!(["read-config"]), "exactly the role's policy");
    assert_eq!(data["orphan"], true, "an orphan, as the configured token role makes them");
    // The mint grace was ended through the bound role: the token lives its role's 5 minutes.
    assert!(data["ttl"].as_u64().unwrap() > 60, "extended past its grace: {data}");

    let (status, role) =
        setup.bao.root(Method::GET, &format!("auth/token/roles/{TOKEN_ROLE}-bound-127-0-0-5-32"), None).await;
    assert_eq!(status, 200, "{role}");
    assert_eq!(role["data"]["allowed_policies"], json!(["read-config"]), "the configured role's settings");
    assert_eq!(role["data"]["orphan"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unbound_token_works_from_both_addresses() {
    let setup = setup().await;
    let exchanged = exchange(&setup, "read-config", "127.0.0.5", "289782451").await;
    assert_eq!(exchanged.credentials[0].bound_to, None);
    let minted = minted_event(&setup, &exchanged.credentials[0].lease_id).await;
    assert!(minted.get("bound_to").is_none(), "an unbound credential says nothing of binding: {minted}");
    let (token, _) = vault_token(&exchanged);
    for from in ["127.0.0.5", "127.0.0.6"] {
        let (status, answer) = setup.bao.read_secret_from(&token, from).await;
        assert_eq!(status, 200, "from {from}: {answer}");
    }
    assert_eq!(bound_roles(&setup.bao).await, Vec::<String>::new(), "no bound role made");
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_from_one_block_share_its_role_and_another_block_gets_its_own() {
    let setup = setup().await;
    let first = exchange(&setup, "read-config-pool", "127.0.0.5", "1001").await;
    let second = exchange(&setup, "read-config-pool", "127.0.0.6", "1002").await;
    assert_eq!(second.credentials[0].bound_to.map(|block| block.to_string()).as_deref(), Some("127.0.0.0/24"));
    assert_eq!(bound_roles(&setup.bao).await, vec![format!("{TOKEN_ROLE}-bound-127-0-0-0-24")]);
    for exchanged in [&first, &second] {
        let (token, _) = vault_token(exchanged);
        assert_eq!(setup.bao.read_secret_from(&token, "127.0.0.7").await.0, 200, "anywhere in the /24");
        assert_eq!(setup.bao.read_secret_from(&token, "127.0.1.5").await.0, 403, "not outside it");
    }

    exchange(&setup, "read-config-bound", "127.0.0.5", "1003").await;
    exchange(&setup, "read-config-bound", "127.0.0.6", "1004").await;
    assert_eq!(
        bound_roles(&setup.bao).await,
        vec![
            format!("{TOKEN_ROLE}-bound-127-0-0-0-24"),
            format!("{TOKEN_ROLE}-bound-127-0-0-5-32"),
            format!("{TOKEN_ROLE}-bound-127-0-0-6-32"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_role_is_refused_where_the_address_is_unknown_and_the_token_stays_unspent() {
    let setup = setup().await;
    let token = github_token(&setup.issuer, |_| {});
    let refused = setup.broker.exchange.exchange(&token, request("read-config-bound", None)).await;
    assert!(
        matches!(&refused, Err(Error::AddressUnknown { role }) if role == "read-config-bound"),
        "{:?}",
        refused.err()
    );
    assert_eq!(bound_roles(&setup.bao).await, Vec::<String>::new(), "nothing made");
    let granted = setup.broker.exchange.exchange(&token, request("read-config-bound", Some("127.0.0.5"))).await;
    assert!(granted.is_ok(), "the same token, with its address, is granted: {:?}", granted.err());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_role_made_again_after_it_was_deleted_by_hand() {
    let setup = setup().await;
    exchange(&setup, "read-config-bound", "127.0.0.5", "2001").await;
    let role = format!("auth/token/roles/{TOKEN_ROLE}-bound-127-0-0-5-32");
    let (status, _) = setup.bao.root(Method::DELETE, &role, None).await;
    assert!(status < 300);
    let exchanged = exchange(&setup, "read-config-bound", "127.0.0.5", "2002").await;
    let (token, _) = vault_token(&exchanged);
    assert_eq!(setup.bao.read_secret_from(&token, "127.0.0.5").await.0, 200);
    assert_eq!(setup.bao.read_secret_from(&token, "127.0.0.6").await.0, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_role_is_deleted_once_no_live_lease_of_its_block_remains() {
    let setup = setup().await;
    let broker = &setup.broker.broker;
    let first = exchange(&setup, "read-config-bound", "127.0.0.5", "3001").await;
    let second = exchange(&setup, "read-config-bound", "127.0.0.5", "3002").await;
    let role = format!("{TOKEN_ROLE}-bound-127-0-0-5-32");

    sweep(broker).await.expect("sweeps");
    assert_eq!(bound_roles(&setup.bao).await, vec![role.clone()], "kept while its leases live");

    setup.broker.store.request_revocation(&first.credentials[0].lease_id).await.expect("first job ended");
    sweep(broker).await.expect("sweeps");
    assert_eq!(bound_roles(&setup.bao).await, vec![role.clone()], "kept while the second job's lease lives");

    setup.broker.store.request_revocation(&second.credentials[0].lease_id).await.expect("second job ended");
    sweep(broker).await.expect("sweeps");
    assert_eq!(bound_roles(&setup.bao).await, Vec::<String>::new(), "deleted: no live lease uses it");

    // The next job from the block makes it again, and is bound as before.
    let third = exchange(&setup, "read-config-bound", "127.0.0.5", "3003").await;
    assert_eq!(bound_roles(&setup.bao).await, vec![role]);
    let (token, _) = vault_token(&third);
    assert_eq!(setup.bao.read_secret_from(&token, "127.0.0.5").await.0, 200);
    assert_eq!(setup.bao.read_secret_from(&token, "127.0.0.6").await.0, 403);
}
