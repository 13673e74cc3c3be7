//! The `ci-creds` binary running `serve` on a free loopback port with a generated config, its
//! logs captured to a file; stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use super::bao::ROOT_TOKEN;
use super::{AUDIENCE, eventually};

pub struct Broker {
    pub url: String,
    pub dir: TempDir,
    child: Option<Child>,
    http: reqwest::Client,
    env: Vec<(String, String)>,
}

pub struct Setup<'a> {
    pub issuers: Vec<(&'a str, &'a str, &'a str)>,
    pub vault_address: &'a str,
    pub policy: &'a str,
    /// Appended to the generated config (e.g. `[webhooks.github]` sections).
    pub extra_config: &'a str,
    /// A PostgreSQL URL without password (the broker reads it from TEST_STORE_PASSWORD); the
    /// embedded SQLite store when `None`.
    pub store_url: Option<&'a str>,
    /// Extra environment for the broker process (e.g. its own AWS identity).
    pub env: Vec<(&'a str, String)>,
}

pub const STORE_PASSWORD: &str = super::postgres::SUPERUSER_PASSWORD;

/// The webhook secrets the broker reads from its environment in tests.
pub const GITHUB_WEBHOOK_SECRET: &str = "test-github-webhook-secret";
pub const GITLAB_WEBHOOK_TOKEN: &str = "test-gitlab-webhook-token";
pub const BUILDKITE_WEBHOOK_TOKEN: &str = "test-buildkite-webhook-token";

fn store_section(postgres_url: Option<&str>) -> String {
    match postgres_url {
        Some(url) => format!(
            "url = \"{url}\"\npassword_env = \"TEST_STORE_PASSWORD\"\nacquire_timeout_seconds = 1\nstatement_timeout_seconds = 2"
        ),
        None => "url = \"sqlite://ci-creds.db\"".to_owned(),
    }
}

impl Broker {
    pub async fn start(setup: &Setup<'_>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("policy")).expect("policy dir");
        std::fs::write(dir.path().join("policy/roles.yaml"), setup.policy).expect("policy");
        let mut config = format!(
            "listen = \"127.0.0.1:0\"\naudience = \"{AUDIENCE}\"\npolicy_dir = \"policy\"\n\n[store]\n{}\n\n[vault]\naddress = \"{}\"\ntoken_env = \"TEST_VAULT_TOKEN\"\n",
            store_section(setup.store_url),
            setup.vault_address
        );
        config.push_str("timeout_seconds = 2\n");
        // A `[vault]` table in the extra config adds its keys to this one (TOML refuses a table
        // defined twice).
        let (vault_keys, extra_config) = take_table(setup.extra_config, "[vault]");
        config.push_str(&vault_keys);
        config.push_str(&extra_config);
        for (name, kind, issuer) in &setup.issuers {
            config.push_str(&format!("\n[[issuers]]\nname = \"{name}\"\nkind = \"{kind}\"\nissuer = \"{issuer}\"\n"));
        }
        std::fs::write(dir.path().join("config.toml"), config).expect("config");
        let env = setup.env.iter().map(|(name, value)| ((*name).to_owned(), value.clone())).collect();
        let mut broker = Self { url: String::new(), dir, child: None, http: reqwest::Client::new(), env };
        broker.spawn().await;
        broker
    }

    /// Starts the binary again on the same config and database (after `stop`).
    pub async fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).expect("log file");
        // Counted before the child starts: a child quick to listen would otherwise be counted as
        // an earlier start, and its own line waited for in vain.
        let starts_before = self.logs().matches("ci-creds listening").count();
        let child = Command::new(binary())
            .args(["serve", "--config"])
            .arg(self.dir.path().join("config.toml"))
            .env("TEST_VAULT_TOKEN", ROOT_TOKEN)
            .env("TEST_STORE_PASSWORD", STORE_PASSWORD)
            .env("TEST_GITHUB_WEBHOOK_SECRET", GITHUB_WEBHOOK_SECRET)
            .env("TEST_GITLAB_WEBHOOK_TOKEN", GITLAB_WEBHOOK_TOKEN)
            .env("TEST_BUILDKITE_WEBHOOK_TOKEN", BUILDKITE_WEBHOOK_TOKEN)
            .env("RUST_LOG", "trace")
            .envs(self.env.iter().map(|(name, value)| (name.as_str(), value.as_str())))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("broker binary starts");
        self.child = Some(child);
        // The broker listens on a port the OS picked and logs it: no race for a free port.
        let log_path = self.log_path();
        let mut address = None;
        let started = eventually(|| {
            let logs = std::fs::read_to_string(&log_path).unwrap_or_default();
            address = logs
                .lines()
                .filter(|line| line.contains("ci-creds listening"))
                .nth(starts_before)
                .and_then(|line| line.split("addr=").nth(1))
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned);
            std::future::ready(address.is_some())
        })
        .await;
        assert!(started, "the broker did not start; its log:\n{}", self.logs());
        self.url = format!("http://{}", address.unwrap_or_default());
    }

    /// Stops the broker, puts `keys` at the top of its config (top-level keys must come before
    /// the config's tables) and starts it again on the same store.
    pub async fn restart_with_top_level_keys(&mut self, keys: &str) {
        self.stop();
        let path = self.dir.path().join("config.toml");
        let config = std::fs::read_to_string(&path).expect("config");
        std::fs::write(&path, format!("{keys}\n{config}")).expect("config");
        self.spawn().await;
    }

    /// Sets `name` in the environment of the broker's next start (`spawn`).
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.env.retain(|(set, _)| set != name);
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// SIGKILL, as a crash would: no graceful shutdown.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The running broker's process id, to read its memory from `/proc`.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.log")
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// The audit trail's events, in order (empty when there is none yet).
    pub fn audit_events(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.audit_path()).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).expect("every audit line is JSON")).collect()
    }

    /// GETs `path`; returns status and body text.
    pub async fn get_text(&self, path: &str) -> (u16, String) {
        let response = self.http.get(format!("{}{path}", self.url)).send().await.expect("broker answers");
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }

    pub fn database(&self) -> PathBuf {
        self.dir.path().join("ci-creds.db")
    }

    pub fn config_dir(&self) -> &Path {
        self.dir.path()
    }

    /// POSTs `/v1/credentials` with `token` and `body`; returns status and JSON answer.
    pub async fn exchange(&self, token: &str, body: &Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/v1/credentials", self.url))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("broker answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// POSTs a raw body to `path` with `headers`; returns status and JSON answer.
    pub async fn post(&self, path: &str, headers: &[(&str, String)], body: Vec<u8>) -> (u16, Value) {
        let mut request = self.http.post(format!("{}{path}", self.url)).body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.expect("broker answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Runs the binary with `args` against this broker's config; returns stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let output = Command::new(binary())
            .args(args)
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .output()
            .expect("the binary runs");
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("UTF-8 output")
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The keys of `config`'s table `header` (e.g. `[vault]`), and the rest of `config`.
fn take_table(config: &str, header: &str) -> (String, String) {
    let (mut table, mut rest) = (String::new(), String::new());
    let mut inside = false;
    for line in config.lines() {
        if line.trim_start().starts_with('[') {
            inside = line.trim() == header;
            if inside {
                continue;
            }
        }
        let into = if inside { &mut table } else { &mut rest };
        into.push_str(line);
        into.push('\n');
    }
    (table, rest)
}

/// The binary under test; `CI_CREDS_BIN` points a long benchmark at a copy, so that rebuilding
/// meanwhile cannot replace the binary it restarts or runs.
pub(crate) fn binary() -> std::path::PathBuf {
    std::env::var_os("CI_CREDS_BIN").map_or_else(|| env!("CARGO_BIN_EXE_ci-creds").into(), Into::into)
}
