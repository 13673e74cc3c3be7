//! The broker's configuration: TOML, unknown keys refused, validated at start with errors that
//! name the offending key. Secrets are never in the file, only the names of the env vars
//! holding them.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::Deserialize;
use thiserror::Error;

use crate::api::TrustedProxies;
use crate::api::limits::LimitsConfig;
use crate::audit::AuditConfig;
use crate::backends::{AwsConfig, GithubAppConfig, VaultConfig, VaultCredentials};
use crate::ci::CiKind;
use crate::ci_api::CiApisConfig;
use crate::env_secret::secret_from_env;
use crate::identity::{ASYMMETRIC_ALGORITHMS, IssuerConfig};
use crate::lifecycle::LifecycleConfig;
use crate::lifecycle::webhooks::{self, Webhooks, WebhooksConfig};
use crate::metrics::MetricsConfig;
use crate::net::check_url_scheme;
use crate::policy::{self, PolicyFile, PolicySet};
pub use crate::store::StoreConfig;

/// A crash can leave a Vault token alive at most this long (`[vault] mint_grace_seconds`).
const MAX_MINT_GRACE_SECONDS: u64 = 600;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub listen: SocketAddr,
    /// Every token's `aud` must contain exactly this.
    pub audience: String,
    /// Relative paths are taken from the config file's folder.
    pub policy_dir: PathBuf,
    pub store: StoreConfig,
    pub issuers: Vec<IssuerConfig>,
    #[serde(default)]
    pub vault: Option<VaultConfig>,
    #[serde(default)]
    pub aws: Option<AwsConfig>,
    #[serde(default)]
    pub github: Option<GithubAppConfig>,
    #[serde(default)]
    pub webhooks: WebhooksConfig,
    /// `[ci_api.<issuer>]`: the CI's own API, asked whether a job still runs.
    #[serde(default)]
    pub ci_api: CiApisConfig,
    #[serde(default)]
    pub lifecycle: LifecycleConfig,
    #[serde(default)]
    pub audit: AuditConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    /// CIDR blocks of the proxies whose `X-Forwarded-For` names an exchange's address; as
    /// written in the file, parsed into `trusted_proxies` at load.
    #[serde(default, rename = "trusted_proxies")]
    trusted_proxy_blocks: Vec<String>,
    #[serde(skip)]
    pub trusted_proxies: TrustedProxies,
}

/// Secrets read from the environment at start, kept in redacting types.
pub struct Secrets {
    /// What the broker logs in to Vault with, when `[vault]` is configured.
    pub vault_credentials: Option<VaultCredentials>,
    /// The minting GitHub App's private key, when `[github]` is configured.
    pub github_private_key: Option<SecretString>,
    pub store_password: Option<SecretString>,
    pub webhooks: Webhooks,
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot read config {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("config {path}: {message}")]
    Parse { path: String, message: String },
    #[error("policy: {0}")]
    Policy(#[from] policy::Error),
    #[error("config key `{key}`: {message}")]
    Invalid { key: String, message: String },
}

fn invalid(key: impl Into<String>, message: impl Into<String>) -> Error {
    Error::Invalid { key: key.into(), message: message.into() }
}

impl Config {
    /// Reads, parses and validates `path`; relative paths inside are resolved against its folder.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text =
            std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.display().to_string(), source })?;
        Self::parse(&text, path)
    }

    /// What `load` does with the text of the file at `path`, reading nothing itself.
    pub fn parse(text: &str, path: &Path) -> Result<Self, Error> {
        let mut config: Config = toml::from_str(text)
            .map_err(|e| Error::Parse { path: path.display().to_string(), message: e.to_string() })?;
        let base = path.parent().unwrap_or(Path::new("."));
        config.policy_dir = base.join(&config.policy_dir);
        if config.store.url.starts_with("sqlite:") {
            config.store.url = resolve_sqlite_url(&config.store.url, base)?;
        }
        if let Some(file) = &config.audit.file {
            config.audit.file = Some(base.join(file));
        }
        config.validate()?;
        config.trusted_proxies = TrustedProxies::parse(&config.trusted_proxy_blocks)
            .map_err(|(n, message)| invalid(format!("trusted_proxies[{n}]"), message))?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), Error> {
        self.store.kind().map_err(|e| invalid("store.url", e.to_string()))?;
        if self.audience.trim().is_empty() {
            return Err(invalid("audience", "must not be empty"));
        }
        if self.issuers.is_empty() {
            return Err(invalid("issuers", "at least one [[issuers]] entry is required"));
        }
        let mut names = HashSet::new();
        let mut urls = HashSet::new();
        for (i, issuer) in self.issuers.iter().enumerate() {
            let key = |field: &str| format!("issuers[{i}].{field}");
            if issuer.name.is_empty() {
                return Err(invalid(key("name"), "must not be empty"));
            }
            if !names.insert(issuer.name.as_str()) {
                return Err(invalid(key("name"), format!("`{}` is used by another issuer", issuer.name)));
            }
            if !urls.insert(issuer.issuer.as_str()) {
                return Err(invalid(key("issuer"), "is configured twice"));
            }
            check_url_scheme(&issuer.issuer).map_err(|e| invalid(key("issuer"), e))?;
            if let Some(jwks_url) = &issuer.jwks_url {
                check_url_scheme(jwks_url).map_err(|e| invalid(key("jwks_url"), e))?;
            }
            if issuer.algorithms.is_empty() {
                return Err(invalid(key("algorithms"), "must list at least one algorithm"));
            }
            if let Some(alg) = issuer.algorithms.iter().find(|alg| !ASYMMETRIC_ALGORITHMS.contains(alg)) {
                return Err(invalid(key("algorithms"), format!("{alg:?} is not an asymmetric algorithm")));
            }
            issuer
                .kind
                .ci()
                .check_claim_names(&issuer.claim_names)
                .map_err(|(role, message)| invalid(key(&format!("claim_names.{role}")), message))?;
            if let Some(root) = &issuer.controller_url {
                if issuer.kind != CiKind::Jenkins {
                    return Err(invalid(key("controller_url"), "only a Jenkins issuer names its controller"));
                }
                check_url_scheme(root).map_err(|e| invalid(key("controller_url"), e))?;
                if !root.ends_with('/') || root.contains(['?', '#']) {
                    return Err(invalid(
                        key("controller_url"),
                        "must be the controller's root URL as Jenkins writes it, ending in `/`",
                    ));
                }
            }
        }
        if let Some(vault) = &self.vault {
            check_url_scheme(&vault.address).map_err(|e| invalid("vault.address", e))?;
            vault.login_method().map_err(|(key, message)| invalid(key, message))?;
            // The grace must outlast the Vault call that ends it (the extension), and stay a
            // bound in seconds on what a crash can leave behind.
            if vault.mint_grace_seconds <= vault.timeout_seconds || vault.mint_grace_seconds > MAX_MINT_GRACE_SECONDS {
                return Err(invalid(
                    "vault.mint_grace_seconds",
                    format!(
                        "must be longer than vault.timeout_seconds ({}) and at most {MAX_MINT_GRACE_SECONDS}",
                        vault.timeout_seconds
                    ),
                ));
            }
        }
        if let Some(github) = &self.github {
            check_url_scheme(&github.api_url).map_err(|e| invalid("github.api_url", e))?;
            if github.app_id.is_empty() || !github.app_id.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid("github.app_id", "must be the App's numeric id"));
            }
        }
        if let Some(aws) = &self.aws {
            if aws.region.trim().is_empty() {
                return Err(invalid("aws.region", "must not be empty"));
            }
            if let Some(endpoint) = &aws.endpoint_url {
                check_url_scheme(endpoint).map_err(|e| invalid("aws.endpoint_url", e))?;
            }
        }
        webhooks::validate(&self.webhooks, |name| self.kind_of(name))
            .map_err(|(key, message)| invalid(key, message))?;
        self.validate_ci_apis()?;
        self.limits.validate().map_err(|(key, message)| invalid(key, message))?;
        if self.lifecycle.reconcile_interval.is_zero() {
            return Err(invalid("lifecycle.reconcile_interval", "must be positive"));
        }
        if self.lifecycle.fleet_refresh_interval < std::time::Duration::from_secs(1) {
            return Err(invalid("lifecycle.fleet_refresh_interval", "must be at least 1s"));
        }
        if self.lifecycle.ci_credentials_interval < std::time::Duration::from_secs(1) {
            return Err(invalid("lifecycle.ci_credentials_interval", "must be at least 1s"));
        }
        if self.lifecycle.sweep_interval.is_zero() {
            return Err(invalid("lifecycle.sweep_interval", "must be positive"));
        }
        // A claim shorter than one backend call would let a second worker revoke the same lease.
        // A single-use runner's record must outlive the runner, or its second job would pass.
        if self.lifecycle.runner_retention < std::time::Duration::from_secs(24 * 3600) {
            return Err(invalid("lifecycle.runner_retention", "must be at least 1d"));
        }
        if self.lifecycle.claim_timeout < std::time::Duration::from_secs(1) {
            return Err(invalid("lifecycle.claim_timeout", "must be at least 1s"));
        }
        Ok(())
    }

    /// The CI of the configured issuer named `name`.
    fn kind_of(&self, name: &str) -> Option<CiKind> {
        self.issuers.iter().find(|issuer| issuer.name == name).map(|issuer| issuer.kind)
    }

    fn validate_ci_apis(&self) -> Result<(), Error> {
        for issuer in self.issuers.iter().filter(|issuer| issuer.kind.ci().liveness_required) {
            if !self.ci_api.contains_key(&issuer.name) {
                return Err(invalid(
                    format!("ci_api.{}", issuer.name),
                    format!(
                        "is required: {} tokens are exchanged only while the CI's API says the job runs",
                        issuer.kind.ci().title
                    ),
                ));
            }
        }
        for (name, table) in &self.ci_api {
            let kind = match self.issuers.iter().find(|issuer| &issuer.name == name) {
                Some(issuer) => issuer.kind,
                None => return Err(invalid(format!("ci_api.{name}"), format!("no issuer is named `{name}`"))),
            };
            table.validate(name, kind).map_err(|(key, message)| invalid(key, message))?;
        }
        Ok(())
    }

    /// The secrets `serve` needs, read from the environment variables the config names.
    pub fn secrets(&self) -> Result<Secrets, Error> {
        let vault_credentials = self
            .vault
            .as_ref()
            .map(|vault| vault.credentials().map_err(|(key, message)| invalid(key, message)))
            .transpose()?;
        let webhooks = Webhooks::from_config(&self.webhooks, |name| self.kind_of(name))
            .map_err(|(key, message)| invalid(key, message))?;
        let github_private_key = self
            .github
            .as_ref()
            .map(|github| github.private_key().map_err(|e| invalid("github.private_key_env", e)))
            .transpose()?;
        Ok(Secrets { vault_credentials, github_private_key, store_password: self.store_password()?, webhooks })
    }

    /// The PostgreSQL password from `store.password_env`, if the config names one.
    pub fn store_password(&self) -> Result<Option<SecretString>, Error> {
        let Some(env) = &self.store.password_env else { return Ok(None) };
        secret_from_env(env).map(Some).map_err(|message| invalid("store.password_env", message))
    }
}

/// Makes a relative SQLite path relative to the config file rather than the working directory.
fn resolve_sqlite_url(url: &str, base: &Path) -> Result<String, Error> {
    let Some(rest) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) else {
        return Err(invalid("store.url", "must be sqlite://PATH or postgres://…"));
    };
    let (path, query) = rest.split_once('?').map_or((rest, None), |(p, q)| (p, Some(q)));
    if path.is_empty() {
        return Err(invalid("store.url", "names no database file"));
    }
    let path = if path == ":memory:" { PathBuf::from(path) } else { base.join(path) };
    Ok(match query {
        Some(query) => format!("sqlite://{}?{query}", path.display()),
        None => format!("sqlite://{}", path.display()),
    })
}

/// Reads every `*.yaml` / `*.yml` in `dir` except policy tests (`*_test.yaml`), in name order,
/// and parses them as one policy set.
pub fn load_policies(dir: &Path) -> Result<PolicySet, Error> {
    let files = read_policy_files(dir).map_err(|source| Error::Read { path: dir.display().to_string(), source })?;
    let sources: Vec<PolicyFile<'_>> =
        files.iter().map(|(path, text)| PolicyFile { path: path.as_str(), text: text.as_str() }).collect();
    Ok(PolicySet::parse(&sources)?)
}

/// The policy files of `dir` with their text, in name order; tests kept beside them are skipped.
pub fn read_policy_files(dir: &Path) -> std::io::Result<Vec<(String, String)>> {
    yaml_files(dir, |path| !is_policy_test(path))?
        .into_iter()
        .map(|path| Ok((path.display().to_string(), std::fs::read_to_string(&path)?)))
        .collect()
}

/// The policy test files (`*_test.yaml` / `*_test.yml`) of `dir`, in name order.
pub fn policy_test_paths(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    yaml_files(dir, is_policy_test)
}

/// Whether `path` is a table of policy tests rather than policy.
pub fn is_policy_test(path: &Path) -> bool {
    path.file_stem().and_then(|stem| stem.to_str()).is_some_and(|stem| stem.ends_with("_test"))
}

fn yaml_files(dir: &Path, keep: impl Fn(&Path) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension().is_some_and(|ext| ext == "yaml" || ext == "yml") && path.is_file() && keep(path)
        })
        .collect();
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vault_auth_tests;
