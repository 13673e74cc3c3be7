//! A real moto server (AWS STS and IAM) on a free loopback port, stopped when dropped, and
//! AWS SDK clients pointed at it.

use std::process::{Child, Command, Stdio};

use aws_sdk_iam::config::{BehaviorVersion, Credentials, Region};
use serde_json::Value;

use super::free_port;

pub const ACCOUNT: &str = "123456789012";
pub const REGION: &str = "us-east-1";

pub struct Moto {
    pub url: String,
    child: Child,
}

impl Moto {
    /// `env` goes to moto itself, e.g. `INITIAL_NO_AUTH_ACTION_COUNT` to make it enforce IAM.
    pub async fn start(env: &[(&str, String)]) -> Self {
        // Another test may take the free port first: then this server exits, and we try again.
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new("moto_server")
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("`moto_server` must be installed (pip install 'moto[server]'); the test command installs it");
            let mut moto = Self { url: format!("http://127.0.0.1:{port}"), child };
            if moto.wait_ready().await {
                return moto;
            }
            moto.stop();
        }
        panic!("moto did not start");
    }

    async fn wait_ready(&mut self) -> bool {
        let http = reqwest::Client::new();
        for _ in 0..300 {
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            // moto's own introspection endpoint, not an AWS API: it does not count as an action.
            let ready = http.get(format!("{}/moto-api/", self.url)).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
    }

    pub fn iam(&self, key: &str, secret: &str) -> aws_sdk_iam::Client {
        let config = aws_sdk_iam::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .endpoint_url(&self.url)
            .credentials_provider(Credentials::new(key, secret, None, None, "test"))
            .build();
        aws_sdk_iam::Client::from_conf(config)
    }

    /// An STS client signing with the given keys (e.g. a session the broker minted).
    pub fn sts(&self, key: &str, secret: &str, session_token: Option<&str>) -> aws_sdk_sts::Client {
        let credentials = Credentials::new(key, secret, session_token.map(str::to_owned), None, "test");
        let config = aws_sdk_sts::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .endpoint_url(&self.url)
            .credentials_provider(credentials)
            .build();
        aws_sdk_sts::Client::from_conf(config)
    }

    /// What moto recorded about its models (its `/moto-api/data.json`), e.g. assumed roles.
    pub async fn recorded(&self, service: &str, model: &str) -> Vec<Value> {
        let data: Value = reqwest::get(format!("{}/moto-api/data.json", self.url))
            .await
            .expect("moto answers")
            .json()
            .await
            .expect("JSON");
        data[service][model].as_array().cloned().unwrap_or_default()
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}
