//! A broker built inside the test process, for tests that call `Exchange::exchange` with what
//! the HTTP layer would have determined (the job's address), against a real OpenBao and store.

use ci_creds::audit::Audit;
use ci_creds::backends::Backends;
use ci_creds::backends::vault::{VaultBackend, VaultConfig};
use ci_creds::ci_api::CiApis;
use ci_creds::config::{Config, load_policies};
use ci_creds::identity::Verifier;
use ci_creds::lifecycle::webhooks::Webhooks;
use ci_creds::lifecycle::{Broker, Exchange, Parts};
use ci_creds::net::HttpClient;
use ci_creds::store::Store;
use secrecy::SecretString;
use tempfile::TempDir;

use super::AUDIENCE;
use super::bao::Bao;

/// What the broker reads from disk (its SQLite store, its policy); dropped with the broker.
pub struct InProcess {
    pub broker: Broker,
    /// The broker's exchange service, as the API calls it.
    pub exchange: std::sync::Arc<Exchange>,
    /// The broker's store, for a test to change what the API would (a job's end).
    pub store: Store,
    pub dir: TempDir,
}

impl InProcess {
    /// The audit events written so far, one JSON object each.
    pub fn audit_events(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default();
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }
}

/// A broker trusting `issuer_url` as the `github` issuer, with `policy` as its one policy file,
/// minting Vault tokens on `bao` with `vault_token` through `token_role`.
pub async fn broker(
    issuer_url: &str,
    policy: &str,
    bao: &Bao,
    vault_token: &str,
    token_role: Option<&str>,
) -> InProcess {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("policy")).expect("policy dir");
    std::fs::write(dir.path().join("policy/roles.yaml"), policy).expect("policy");
    let text = format!(
        "listen = \"127.0.0.1:0\"\naudience = \"{AUDIENCE}\"\npolicy_dir = \"policy\"\n\n[store]\nurl = \"sqlite://ci-creds.db\"\n\n[audit]\nfile = \"audit.jsonl\"\n\n[[issuers]]\nname = \"github\"\nkind = \"github\"\nissuer = \"{issuer_url}\"\n"
    );
    let config = Config::parse(&text, &dir.path().join("config.toml")).expect("config");
    let vault_config = VaultConfig {
        address: bao.address.clone(),
        token_env: "UNUSED".into(),
        timeout_seconds: 2,
        mint_grace_seconds: 30,
        token_role: token_role.map(str::to_owned),
        auth: Default::default(),
    };
    let http = HttpClient::new().expect("HTTP client");
    let vault = VaultBackend::new(&vault_config, &SecretString::from(vault_token), http.clone()).expect("vault");
    let store = Store::open(&config.store, None).await.expect("store");
    let broker = Broker::new(Parts {
        verifier: Verifier::new(config.audience.clone(), config.issuers.clone(), http),
        policy: load_policies(&config.policy_dir).expect("policy loads"),
        store: store.clone(),
        backends: Backends { vault: Some(vault), ..Backends::default() },
        webhooks: Webhooks::default(),
        lifecycle: config.lifecycle.clone(),
        audit: Audit::open(&config.audit).expect("audit"),
        ci_apis: CiApis::from_config(&config.ci_api, &config.issuers).expect("CI APIs"),
    });
    InProcess { exchange: broker.exchange(), broker, store, dir }
}
