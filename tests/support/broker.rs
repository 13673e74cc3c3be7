//! The `ci-creds` binary running `serve` on a free loopback port with a generated config, its
//! logs captured to a file; stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use super::bao::ROOT_TOKEN;
use super::{AUDIENCE, free_port, wait_until};

pub struct Broker {
    pub url: String,
    pub dir: TempDir,
    child: Option<Child>,
    http: reqwest::Client,
}

pub struct Setup<'a> {
    pub issuers: Vec<(&'a str, &'a str, &'a str)>,
    pub vault_address: &'a str,
    pub policy: &'a str,
}

impl Broker {
    pub async fn start(setup: &Setup<'_>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("policy")).expect("policy dir");
        std::fs::write(dir.path().join("policy/roles.yaml"), setup.policy).expect("policy");
        let port = free_port();
        let mut config = format!(
            "listen = \"127.0.0.1:{port}\"\naudience = \"{AUDIENCE}\"\npolicy_dir = \"policy\"\n\n[store]\nurl = \"sqlite://ci-creds.db\"\n\n[vault]\naddress = \"{}\"\ntoken_env = \"TEST_VAULT_TOKEN\"\n",
            setup.vault_address
        );
        for (name, kind, issuer) in &setup.issuers {
            config.push_str(&format!(
                "\n[[issuers]]\nname = \"{name}\"\nkind = \"{kind}\"\nissuer = \"{issuer}\"\n"
            ));
        }
        std::fs::write(dir.path().join("config.toml"), config).expect("config");
        let mut broker = Self {
            url: format!("http://127.0.0.1:{port}"),
            dir,
            child: None,
            http: reqwest::Client::new(),
        };
        broker.spawn().await;
        broker
    }

    /// Starts the binary again on the same config and database (after `stop`).
    pub async fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_ci-creds"))
            .args(["serve", "--config"])
            .arg(self.dir.path().join("config.toml"))
            .env("TEST_VAULT_TOKEN", ROOT_TOKEN)
            .env("RUST_LOG", "trace")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("broker binary starts");
        self.child = Some(child);
        let http = self.http.clone();
        let url = self.url.clone();
        wait_until("broker", || {
            let (http, url) = (http.clone(), url.clone());
            async move { http.get(format!("{url}/healthz")).send().await.is_ok() }
        })
        .await;
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("broker.log")
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
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

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}
