//! The full local stack for end-to-end tests: OpenBao, a GitHub-shaped issuer and the broker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ci_creds::dev::DevIssuer;
use ci_creds::store::{Lease, Store};

use super::bao::Bao;
use super::broker::{Broker, STORE_PASSWORD, Setup};
use super::postgres::Postgres;
use super::proxy::Proxy;
use super::start_issuer;

/// Roles the end-to-end tests exchange for; `deploy-prod` is the issue's example role.
pub const POLICY: &str = r#"
runner_tiers:
  - name: hosted
    match: { runner_environment: [github-hosted, gitlab-hosted, buildkite-hosted] }
roles:
  - name: deploy-prod
    backend: vault
    max_ttl: 15m
    vault:
      policies: [deploy-prod]
    allow:
      - issuer: github
        repository: octo-org/octo-repo
        repository_id: "74"
        ref: refs/heads/main
        event: [push, workflow_dispatch]
        environment: prod
        runner_tier: hosted
    deny:
      - claims: { actor: "dependabot[bot]" }
  - name: read-config
    backend: vault
    max_ttl: 5m
    vault:
      policies: [read-config]
    allow:
      - issuer: github
        repository_id: "74"
      - issuer: buildkite
        owner_id: "0184990a-0000-4000-8000-000000000001"
      - issuer: gitlab
        repository_id: "20"
  - name: db-readonly
    backend: vault
    max_ttl: 10m
    vault:
      policies: [db-readonly]
      secret_path: database/creds/readonly
    allow:
      - issuer: github
        repository_id: "74"
  - name: short-lived
    backend: vault
    max_ttl: 2s
    vault:
      policies: [read-config]
    allow:
      - issuer: github
        repository_id: "74"
  - name: pr-preview
    backend: vault
    max_ttl: 5m
    vault:
      policies: [read-config]
    allow:
      - issuer: github
        repository_id: "74"
        event: [pull_request_target]
"#;

pub const DEPLOY_PROD_HCL: &str = r#"path "secret/data/deploy/*" { capabilities = ["read"] }"#;
pub const READ_CONFIG_HCL: &str = r#"path "secret/data/config/*" { capabilities = ["read"] }"#;

/// Webhooks for all three CI systems, and a fast sweeper.
const EXTRA_CONFIG: &str = r#"
[webhooks.github]
issuer = "github"
secret_env = "TEST_GITHUB_WEBHOOK_SECRET"

[webhooks.gitlab]
issuer = "gitlab"
token_env = "TEST_GITLAB_WEBHOOK_TOKEN"

[webhooks.buildkite]
issuer = "buildkite"
token_env = "TEST_BUILDKITE_WEBHOOK_TOKEN"

[lifecycle]
sweep_interval = "1s"
claim_timeout = "3s"
fleet_refresh_interval = "1s"

[audit]
file = "audit.jsonl"

[metrics]
repositories = ["octo-org/octo-repo"]
"#;

pub struct Stack {
    pub bao: Bao,
    /// Between the broker and OpenBao: tests cut it to make an outage.
    pub vault_proxy: Proxy,
    pub github: Arc<DevIssuer>,
    pub gitlab: Arc<DevIssuer>,
    pub buildkite: Arc<DevIssuer>,
    pub broker: Broker,
    /// The PostgreSQL URL (without password) the brokers share, if not the embedded SQLite.
    store_url: Option<String>,
    /// The broker's config beyond issuers, store and Vault.
    extra_config: String,
    /// `POLICY` with any roles a test added.
    policy: String,
    env: Vec<(&'static str, String)>,
}

impl Stack {
    pub async fn start() -> Self {
        Self::start_with_store(None, "", "", Vec::new()).await
    }

    /// A stack whose broker's config also has `config` (e.g. a `[limits]` table).
    pub async fn start_with_config(config: &str) -> Self {
        Self::start_with_store(None, config, "", Vec::new()).await
    }

    /// A stack whose broker also has `config`, the roles `extra_roles` (YAML list items, appended
    /// to `POLICY`'s roles) and `env`.
    pub async fn start_with(config: &str, extra_roles: &str, env: Vec<(&'static str, String)>) -> Self {
        Self::start_with_store(None, config, extra_roles, env).await
    }

    /// A stack whose broker keeps its state in `postgres` (database `ci_creds`, created here).
    pub async fn start_on(postgres: &Postgres) -> Self {
        Self::start_on_with_config(postgres, "").await
    }

    /// A stack on `postgres` whose broker's config also has `config`.
    pub async fn start_on_with_config(postgres: &Postgres, config: &str) -> Self {
        Self::start_on_with(postgres, config, Vec::new()).await
    }

    /// A stack on `postgres` whose broker's config also has `config`, and `env`.
    pub async fn start_on_with(postgres: &Postgres, config: &str, env: Vec<(&'static str, String)>) -> Self {
        postgres.create_database("ci_creds").await;
        Self::start_with_store(Some(postgres.url_without_password("ci_creds")), config, "", env).await
    }

    /// Another broker on the same config and store: a second replica.
    pub async fn replica(&self) -> Broker {
        Broker::start(&self.setup()).await
    }

    fn setup(&self) -> Setup<'_> {
        Setup {
            issuers: vec![
                ("github", "github", self.github.url()),
                ("gitlab", "gitlab", self.gitlab.url()),
                ("buildkite", "buildkite", self.buildkite.url()),
            ],
            vault_address: &self.vault_proxy.address,
            policy: &self.policy,
            extra_config: &self.extra_config,
            store_url: self.store_url.as_deref(),
            env: self.env.clone(),
        }
    }

    /// A stack whose policy also has the runner tiers `tiers` (YAML list items, put before
    /// `POLICY`'s `hosted`) and the roles `extra_roles`; its broker's config also has `config`.
    pub async fn start_with_policy(
        postgres: Option<&Postgres>,
        config: &str,
        tiers: &str,
        extra_roles: &str,
        env: Vec<(&'static str, String)>,
    ) -> Self {
        let store_url = match postgres {
            Some(postgres) => {
                postgres.create_database("ci_creds").await;
                Some(postgres.url_without_password("ci_creds"))
            }
            None => None,
        };
        Self::start_with_store_and_tiers(store_url, config, tiers, extra_roles, env).await
    }

    async fn start_with_store(
        store_url: Option<String>,
        config: &str,
        extra_roles: &str,
        env: Vec<(&'static str, String)>,
    ) -> Self {
        Self::start_with_store_and_tiers(store_url, config, "", extra_roles, env).await
    }

    async fn start_with_store_and_tiers(
        store_url: Option<String>,
        config: &str,
        tiers: &str,
        extra_roles: &str,
        env: Vec<(&'static str, String)>,
    ) -> Self {
        let extra_config = merge_lifecycle(EXTRA_CONFIG, config);
        // Tiers match in order: the test's come first. `roles:` is POLICY's last key, so more
        // list items extend it.
        let policy = POLICY.replacen("runner_tiers:\n", &format!("runner_tiers:\n{tiers}"), 1);
        let policy = format!("{policy}{extra_roles}");
        let bao = Bao::start().await;
        bao.put_policy("deploy-prod", DEPLOY_PROD_HCL).await;
        bao.put_policy("read-config", READ_CONFIG_HCL).await;
        bao.put_secret("deploy/db", serde_json::json!({ "password": "deploy-db-password" })).await;
        bao.put_secret("config/app", serde_json::json!({ "colour": "blue" })).await;
        bao.put_secret("other/thing", serde_json::json!({ "x": "y" })).await;
        let github = start_issuer().await;
        let vault_proxy = Proxy::start(&bao.address).await;
        let gitlab = start_issuer().await;
        let buildkite = start_issuer().await;
        let broker = Broker::start(&Setup {
            issuers: vec![
                ("github", "github", github.url()),
                ("gitlab", "gitlab", gitlab.url()),
                ("buildkite", "buildkite", buildkite.url()),
            ],
            vault_address: &vault_proxy.address,
            policy: &policy,
            extra_config: &extra_config,
            store_url: store_url.as_deref(),
            env: env.clone(),
        })
        .await;
        Self { bao, vault_proxy, github, gitlab, buildkite, broker, store_url, extra_config, policy, env }
    }

    /// The broker's store, opened by the test.
    pub async fn store(&self) -> Store {
        let url = match &self.store_url {
            Some(url) => url.replacen("postgres://postgres@", &format!("postgres://postgres:{STORE_PASSWORD}@"), 1),
            None => format!("sqlite://{}", self.broker.database().display()),
        };
        Store::connect(&url).await.expect("the broker's store opens")
    }

    /// Exchanges `token` for `roles`; returns the minted Vault tokens' accessors.
    pub async fn accessors(&self, token: &str, roles: &[&str]) -> Vec<String> {
        let (status, answer) = self.broker.exchange(token, &serde_json::json!({ "roles": roles })).await;
        assert_eq!(status, 200, "{answer}");
        let credentials = answer["credentials"].as_array().expect("credentials");
        credentials.iter().map(|c| c["vault"]["accessor"].as_str().expect("accessor").to_owned()).collect()
    }

    /// Waits until no token of `accessors` is alive in OpenBao; returns how long that took.
    pub async fn until_revoked(&self, accessors: &[String], limit: Duration) -> Duration {
        let started = Instant::now();
        loop {
            let mut alive = false;
            for accessor in accessors {
                alive |= self.bao.accessor_alive(accessor).await;
            }
            if !alive {
                return started.elapsed();
            }
            assert!(started.elapsed() < limit, "credentials still alive after {limit:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The leases the broker recorded for a job, read from its database.
    pub async fn leases(&self, issuer: &str, job_id: &str) -> Vec<Lease> {
        let store = self.store().await;
        store.leases_of_job(issuer, job_id).await.expect("leases readable")
    }
}

/// `base` followed by `config`, where the keys of a `[lifecycle]` table in `config` join the
/// one `base` has (TOML refuses a table defined twice).
fn merge_lifecycle(base: &str, config: &str) -> String {
    let mut lifecycle = Vec::new();
    let mut rest = Vec::new();
    let mut in_lifecycle = false;
    for line in config.lines() {
        if line.trim_start().starts_with('[') {
            in_lifecycle = line.trim() == "[lifecycle]";
            if in_lifecycle {
                continue;
            }
        }
        if in_lifecycle { lifecycle.push(line) } else { rest.push(line) }
    }
    let base = base.replacen("[lifecycle]\n", &format!("[lifecycle]\n{}\n", lifecycle.join("\n")), 1);
    format!("{base}\n{}", rest.join("\n"))
}
