//! `[vault]` and `[aws]` in the broker's config, apart from the backends that use them so the
//! config parses without the backends' SDKs.

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::env_secret::secret_from_env;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultConfig {
    pub address: String,
    /// The env var holding the broker's own Vault token.
    #[serde(default = "default_token_env")]
    pub token_env: String,
    /// How long one Vault call may take before it counts as failed.
    #[serde(default = "default_timeout_seconds")]
    pub timeout_seconds: u64,
    /// How long a job's token lives until the broker has recorded its accessor and extended it
    /// to the role's TTL: a token created just before a crash dies this soon
    /// (`backends/vault/mint_grace.rs`).
    #[serde(default = "default_mint_grace_seconds")]
    pub mint_grace_seconds: u64,
}

fn default_mint_grace_seconds() -> u64 {
    30
}

fn default_token_env() -> String {
    "VAULT_TOKEN".into()
}

impl VaultConfig {
    pub fn token(&self) -> Result<SecretString, String> {
        secret_from_env(&self.token_env)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsConfig {
    pub region: String,
    /// An STS/IAM-compatible endpoint instead of AWS's own (e.g. a local test server).
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// How long one AWS call, retries included, may take before it counts as failed.
    #[serde(default = "default_timeout_seconds")]
    pub timeout_seconds: u64,
}

/// `[github]`: the broker's GitHub App for minting installation tokens.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubConfig {
    /// `https://api.github.com`, or `https://HOST/api/v3` for GitHub Enterprise Server.
    #[serde(default = "default_github_api_url")]
    pub api_url: String,
    pub app_id: String,
    /// The env var holding the App's PEM private key.
    pub private_key_env: String,
    #[serde(default = "default_timeout_seconds")]
    pub timeout_seconds: u64,
}

fn default_github_api_url() -> String {
    "https://api.github.com".into()
}

impl GithubConfig {
    pub fn private_key(&self) -> Result<SecretString, String> {
        let key = secret_from_env(&self.private_key_env)?;
        if !key.expose_secret().contains("PRIVATE KEY") {
            return Err(format!("the environment variable {} does not hold a PEM private key", self.private_key_env));
        }
        Ok(key)
    }
}

/// For one Vault call, and for one AWS call with its retries.
fn default_timeout_seconds() -> u64 {
    10
}
