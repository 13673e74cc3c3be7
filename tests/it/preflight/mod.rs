//! `ci-creds check` run as an operator runs it, the binary on a config file, against the real
//! components: loopback OIDC issuers, OpenBao, moto, the CI API stand-ins, SQLite. One test
//! starts everything and expects every item to pass; each other test breaks one item on a small
//! config and expects that item's line to say so, with the exit code that follows.

mod all_ok;
mod failures;

use std::process::Command;

use tempfile::TempDir;

use crate::support::AUDIENCE;
use crate::support::broker::binary;

/// What one run printed and returned.
pub struct Checked {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Checked {
    /// The line about `item`: status, then `item: detail — fix`.
    pub fn line(&self, item: &str) -> &str {
        let prefix = format!("{item}: ");
        self.stdout
            .lines()
            .find(|line| line.get(8..).is_some_and(|rest| rest.starts_with(&prefix)))
            .unwrap_or_else(|| panic!("no line for `{item}` in:\n{}", self.stdout))
    }

    pub fn status(&self, item: &str) -> &str {
        self.line(item)[..8].trim_end()
    }
}

/// A config in its own folder: top-level keys, `[store]`, the sections a test adds, then the
/// issuers; the environment the run gets.
pub struct Setup {
    pub dir: TempDir,
    store: String,
    sections: Vec<String>,
    issuers: Vec<(String, String, String, Option<String>)>,
    env: Vec<(String, String)>,
}

impl Setup {
    /// A config with `policy` as its one policy file and an SQLite store migrated by this build.
    pub async fn new(policy: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("policy")).expect("policy dir");
        std::fs::write(dir.path().join("policy/roles.yaml"), policy).expect("policy");
        let database = dir.path().join("ci-creds.db");
        drop(ci_creds::store::Store::connect(&format!("sqlite://{}", database.display())).await.expect("store"));
        Self {
            dir,
            store: "url = \"sqlite://ci-creds.db\"".into(),
            sections: Vec::new(),
            issuers: Vec::new(),
            env: Vec::new(),
        }
    }

    pub fn issuer(&mut self, name: &str, kind: &str, url: &str) -> &mut Self {
        self.issuers.push((name.into(), kind.into(), url.into(), None));
        self
    }

    /// An issuer whose keys are read from `jwks_url` rather than found by discovery.
    pub fn issuer_with_jwks_url(&mut self, name: &str, kind: &str, url: &str, jwks_url: &str) -> &mut Self {
        self.issuers.push((name.into(), kind.into(), url.into(), Some(jwks_url.into())));
        self
    }

    /// The keys of `[store]`, replacing the SQLite default.
    pub fn store(&mut self, keys: &str) -> &mut Self {
        self.store = keys.into();
        self
    }

    pub fn section(&mut self, text: &str) -> &mut Self {
        self.sections.push(text.into());
        self
    }

    pub fn env(&mut self, name: &str, value: &str) -> &mut Self {
        self.env.retain(|(set, _)| set != name);
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn config_path(&self) -> std::path::PathBuf {
        self.dir.path().join("config.toml")
    }

    /// Writes the config and runs `ci-creds check --config <it>` with `args`.
    pub async fn check(&self, args: &[&str]) -> Checked {
        let mut config = format!(
            "listen = \"127.0.0.1:0\"\naudience = \"{AUDIENCE}\"\npolicy_dir = \"policy\"\n\n[store]\n{}\n",
            self.store
        );
        for section in &self.sections {
            config.push_str(&format!("\n{section}\n"));
        }
        for (name, kind, url, jwks_url) in &self.issuers {
            config.push_str(&format!("\n[[issuers]]\nname = \"{name}\"\nkind = \"{kind}\"\nissuer = \"{url}\"\n"));
            if let Some(jwks_url) = jwks_url {
                config.push_str(&format!("jwks_url = \"{jwks_url}\"\n"));
            }
        }
        std::fs::write(self.config_path(), config).expect("config");
        run(&self.config_path(), args, &self.env).await
    }
}

pub async fn run(config: &std::path::Path, args: &[&str], env: &[(String, String)]) -> Checked {
    let mut command = Command::new(binary());
    command.arg("check").arg("--config").arg(config).args(args).env_clear().env("PATH", "/usr/bin:/bin");
    command.envs(env.iter().map(|(name, value)| (name, value)));
    let output = tokio::task::spawn_blocking(move || command.output()).await.unwrap().expect("the binary runs");
    Checked {
        code: output.status.code().expect("an exit code"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8"),
    }
}
