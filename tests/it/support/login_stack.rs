//! OpenBao set up as an operator would for the broker's own login (docs/vault.md): the shipped
//! broker policy loaded from `deploy/vault/ci-creds-broker.hcl`, the orphan token role job tokens
//! are created against, a job policy and its secret; and a broker logging in as the test says.

use std::sync::Arc;

use ci_creds::dev::DevIssuer;
use reqwest::Method;
use serde_json::{Value, json};

use super::bao::Bao;
use super::broker::{Broker, Setup};
use super::{github_token, start_issuer};

/// The token role of `[vault] token_role`, named as the shipped policy names it.
pub const TOKEN_ROLE: &str = "ci-creds-job";
pub const BROKER_POLICY: &str = "ci-creds-broker";

/// `read-config` for the GitHub fixture's repository; `admin` asks for a Vault policy the token
/// role does not allow.
pub const ROLES: &str = r#"
roles:
  - name: read-config
    backend: vault
    max_ttl: 5m
    vault:
      policies: [read-config]
    allow:
      - issuer: github
        repository_id: "74"
  - name: admin
    backend: vault
    max_ttl: 5m
    vault:
      policies: [vault-admin]
    allow:
      - issuer: github
        repository_id: "74"
"#;

const READ_CONFIG_HCL: &str = r#"path "secret/data/config/*" { capabilities = ["read"] }"#;
const VAULT_ADMIN_HCL: &str = r#"path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }"#;

/// The shipped policy, as the repository holds it.
pub fn shipped_policy() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/vault/ci-creds-broker.hcl");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// OpenBao with the shipped broker policy, the job policies, a secret and the token role.
pub async fn bao_for_the_broker() -> Bao {
    let bao = Bao::start().await;
    bao.put_policy(BROKER_POLICY, &shipped_policy()).await;
    bao.put_policy("read-config", READ_CONFIG_HCL).await;
    bao.put_policy("vault-admin", VAULT_ADMIN_HCL).await;
    bao.put_secret("config/app", json!({ "colour": "blue" })).await;
    // The operator's command in docs/vault.md.
    let (status, answer) = bao
        .root(
            Method::POST,
            &format!("auth/token/roles/{TOKEN_ROLE}"),
            Some(json!({ "orphan": true, "allowed_policies": ["read-config"], "renewable": true })),
        )
        .await;
    assert!(status < 300, "token role: HTTP {status} {answer}");
    bao
}

/// A token holding only the shipped policy (no `default`), made with `options` (ttl …).
pub async fn broker_token(bao: &Bao, options: Value) -> (String, String) {
    let mut body = json!({ "policies": [BROKER_POLICY], "no_default_policy": true });
    body.as_object_mut().unwrap().extend(options.as_object().unwrap().clone());
    let (status, answer) = bao.root(Method::POST, "auth/token/create-orphan", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    let auth = &answer["auth"];
    (auth["client_token"].as_str().unwrap().to_owned(), auth["accessor"].as_str().unwrap().to_owned())
}

pub struct LoginStack {
    pub github: Arc<DevIssuer>,
    pub broker: Broker,
}

impl LoginStack {
    /// A broker on `bao` whose `[vault]` table also has `vault_lines` (e.g. `token_role` and a
    /// `[vault.auth]` table), with `env` (its `TEST_VAULT_TOKEN` among them, when it uses one).
    pub async fn start(bao: &Bao, vault_lines: &str, env: Vec<(&'static str, String)>) -> Self {
        let github = start_issuer().await;
        let broker = Broker::start(&Setup {
            issuers: vec![("github", "github", github.url())],
            vault_address: &bao.address,
            policy: ROLES,
            // The broker's config continues its [vault] table with these lines.
            extra_config: vault_lines,
            store_url: None,
            env,
        })
        .await;
        Self { github, broker }
    }

    /// Exchanges a fresh token of the fixture's job for `read-config`: the job token and its
    /// accessor, or the broker's status and answer.
    pub async fn exchange(&self) -> Result<(String, String), (u16, Value)> {
        self.exchange_with(github_token(&self.github, |_| {})).await
    }

    /// An exchange of the job `job_id`: a job asks a few times at most (`max_exchanges_per_job`),
    /// so a minute of exchanges is a minute of jobs.
    pub async fn exchange_as_job(&self, job_id: &str) -> Result<(String, String), (u16, Value)> {
        self.exchange_with(github_token(&self.github, |claims| claims["check_run_id"] = json!(job_id))).await
    }

    async fn exchange_with(&self, token: String) -> Result<(String, String), (u16, Value)> {
        let (status, answer) = self.broker.exchange(&token, &json!({ "roles": ["read-config"] })).await;
        if status != 200 {
            return Err((status, answer));
        }
        let vault = &answer["credentials"][0]["vault"];
        Ok((vault["token"].as_str().unwrap().to_owned(), vault["accessor"].as_str().unwrap().to_owned()))
    }
}

/// Whether `job_token` reads the secret its policy allows.
pub async fn reads_its_secret(bao: &Bao, job_token: &str) -> bool {
    let (status, secret) = bao.request(Method::GET, "secret/data/config/app", job_token, None).await;
    status == 200 && secret["data"]["data"]["colour"] == "blue"
}
