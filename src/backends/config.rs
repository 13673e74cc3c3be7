//! `[vault]` and `[aws]` in the broker's config, apart from the backends that use them so the
//! config parses without the backends' SDKs.

use std::path::{Path, PathBuf};

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
    /// The token role job tokens are created against (`auth/token/create/<role>`), made by the
    /// operator with `orphan=true` and `allowed_policies` (docs/vault.md). Without it, job tokens
    /// are children of the broker's own token and die with it.
    #[serde(default)]
    pub token_role: Option<String>,
    /// `[vault.auth]`: how the broker logs in.
    #[serde(default)]
    pub auth: VaultAuthConfig,
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

/// `[vault.auth]` as written; [`VaultConfig::login_method`] checks it and makes it a [`LoginMethod`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultAuthConfig {
    /// `token` (the default), `approle` or `kubernetes`.
    #[serde(default)]
    pub method: Option<String>,
    /// Where the auth method is mounted, below `auth/`.
    #[serde(default)]
    pub mount: Option<String>,
    /// AppRole: the env var holding the role id.
    #[serde(default)]
    pub role_id_env: Option<String>,
    /// AppRole: the env var holding the secret id, read once at start.
    #[serde(default)]
    pub secret_id_env: Option<String>,
    /// AppRole: the file holding the secret id, read at every login (it may be rotated).
    #[serde(default)]
    pub secret_id_file: Option<PathBuf>,
    /// Kubernetes: the Vault role to log in as.
    #[serde(default)]
    pub role: Option<String>,
    /// Kubernetes: the service account token, read at every login (the kubelet rotates it).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

/// The service account token's path in a pod (Kubernetes: "Configure Service Accounts for Pods",
/// the projected volume mounted at /var/run/secrets/kubernetes.io/serviceaccount).
pub const KUBERNETES_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// How the broker obtains its own Vault token, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginMethod {
    /// A token from `[vault] token_env`, used as it is: renewed if renewable, never replaced.
    Token,
    AppRole {
        mount: String,
        role_id_env: String,
        secret_id: SecretIdSource,
    },
    Kubernetes {
        mount: String,
        role: String,
        token_file: PathBuf,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretIdSource {
    Env(String),
    File(PathBuf),
}

/// What the broker logs in with, read from the environment (and checked readable) at start.
pub enum VaultCredentials {
    Token(SecretString),
    AppRole { mount: String, role_id: SecretString, secret_id: SecretId },
    Kubernetes { mount: String, role: String, token_file: PathBuf },
}

pub enum SecretId {
    Value(SecretString),
    /// Read again at each login.
    File(PathBuf),
}

impl VaultConfig {
    pub fn token(&self) -> Result<SecretString, String> {
        secret_from_env(&self.token_env)
    }

    /// `[vault.auth]` and `token_role` checked together: the error is the offending key and why.
    pub fn login_method(&self) -> Result<LoginMethod, (String, String)> {
        let auth = &self.auth;
        let key = |name: &str| format!("vault.auth.{name}");
        let refuse_keys = |method: &str, keys: &[(&str, bool)]| -> Result<(), (String, String)> {
            match keys.iter().find(|(_, set)| *set) {
                Some((name, _)) => Err((key(name), format!("is not used with method = \"{method}\""))),
                None => Ok(()),
            }
        };
        let method = match auth.method.as_deref().unwrap_or("token") {
            "token" => {
                refuse_keys(
                    "token",
                    &[
                        ("mount", auth.mount.is_some()),
                        ("role_id_env", auth.role_id_env.is_some()),
                        ("secret_id_env", auth.secret_id_env.is_some()),
                        ("secret_id_file", auth.secret_id_file.is_some()),
                        ("role", auth.role.is_some()),
                        ("token_file", auth.token_file.is_some()),
                    ],
                )?;
                LoginMethod::Token
            }
            "approle" => {
                refuse_keys("approle", &[("role", auth.role.is_some()), ("token_file", auth.token_file.is_some())])?;
                let role_id_env = match auth.role_id_env.as_deref() {
                    Some(env) if !env.trim().is_empty() => env.to_owned(),
                    _ => return Err((key("role_id_env"), "is required with method = \"approle\"".into())),
                };
                let secret_id = match (&auth.secret_id_env, &auth.secret_id_file) {
                    (Some(env), None) if !env.trim().is_empty() => SecretIdSource::Env(env.clone()),
                    (None, Some(file)) if !file.as_os_str().is_empty() => SecretIdSource::File(file.clone()),
                    (Some(_), Some(_)) => {
                        return Err((key("secret_id_file"), "give secret_id_env or secret_id_file, not both".into()));
                    }
                    (Some(_), None) => return Err((key("secret_id_env"), "must not be empty".into())),
                    (None, Some(_)) => return Err((key("secret_id_file"), "must not be empty".into())),
                    (None, None) => {
                        return Err((
                            key("secret_id_env"),
                            "method = \"approle\" needs secret_id_env or secret_id_file".into(),
                        ));
                    }
                };
                LoginMethod::AppRole { mount: checked_mount(auth.mount.as_deref(), "approle")?, role_id_env, secret_id }
            }
            "kubernetes" => {
                refuse_keys(
                    "kubernetes",
                    &[
                        ("role_id_env", auth.role_id_env.is_some()),
                        ("secret_id_env", auth.secret_id_env.is_some()),
                        ("secret_id_file", auth.secret_id_file.is_some()),
                    ],
                )?;
                let role = match auth.role.as_deref() {
                    Some(role) if !role.trim().is_empty() => role.to_owned(),
                    _ => return Err((key("role"), "is required with method = \"kubernetes\"".into())),
                };
                let token_file = auth.token_file.clone().unwrap_or_else(|| PathBuf::from(KUBERNETES_TOKEN_FILE));
                if token_file.as_os_str().is_empty() {
                    return Err((key("token_file"), "must not be empty".into()));
                }
                LoginMethod::Kubernetes { mount: checked_mount(auth.mount.as_deref(), "kubernetes")?, role, token_file }
            }
            other => {
                return Err((
                    key("method"),
                    format!("`{other}` is not a login method; use \"token\", \"approle\" or \"kubernetes\""),
                ));
            }
        };
        if let Some(role) = &self.token_role
            && !is_vault_name(role)
        {
            return Err((
                "vault.token_role".into(),
                "must be a Vault role name: letters, digits, `_`, `-` and `.`, starting and ending with a letter or digit".into(),
            ));
        }
        if method != LoginMethod::Token && self.token_role.is_none() {
            return Err((
                "vault.token_role".into(),
                "is required with a login method: job tokens created without an orphan token role are children of \
                 the broker's login token and die when it expires or is replaced (docs/vault.md)"
                    .into(),
            ));
        }
        Ok(method)
    }

    /// The secrets the login method names, read now; files the broker reads at each login are
    /// checked readable.
    pub fn credentials(&self) -> Result<VaultCredentials, (String, String)> {
        match self.login_method()? {
            LoginMethod::Token => {
                self.token().map(VaultCredentials::Token).map_err(|message| ("vault.token_env".into(), message))
            }
            LoginMethod::AppRole { mount, role_id_env, secret_id } => {
                let role_id =
                    secret_from_env(&role_id_env).map_err(|message| ("vault.auth.role_id_env".into(), message))?;
                let secret_id = match secret_id {
                    SecretIdSource::Env(env) => SecretId::Value(
                        secret_from_env(&env).map_err(|message| ("vault.auth.secret_id_env".into(), message))?,
                    ),
                    SecretIdSource::File(path) => {
                        read_secret_file(&path).map_err(|message| ("vault.auth.secret_id_file".into(), message))?;
                        SecretId::File(path)
                    }
                };
                Ok(VaultCredentials::AppRole { mount, role_id, secret_id })
            }
            LoginMethod::Kubernetes { mount, role, token_file } => {
                read_secret_file(&token_file).map_err(|message| ("vault.auth.token_file".into(), message))?;
                Ok(VaultCredentials::Kubernetes { mount, role, token_file })
            }
        }
    }
}

/// A secret kept in a file, by the rule secrets in env vars follow (`env_secret.rs`: one
/// trailing newline is not part of it, other surrounding whitespace is refused); the error names
/// the file, never its content.
pub fn read_secret_file(path: &Path) -> Result<SecretString, String> {
    let text =
        SecretString::from(std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?);
    let text = text.expose_secret();
    if text.len() > MAX_SECRET_FILE_BYTES {
        return Err(format!("{} is larger than {MAX_SECRET_FILE_BYTES} bytes", path.display()));
    }
    let value = text.strip_suffix("\r\n").or_else(|| text.strip_suffix('\n')).unwrap_or(text);
    if value.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    if value.trim() != value {
        return Err(format!(
            "{} has whitespace around its secret; only one trailing newline is ignored",
            path.display()
        ));
    }
    Ok(SecretString::from(value.to_owned()))
}

/// Larger than any secret id or service account token.
const MAX_SECRET_FILE_BYTES: usize = 64 * 1024;

/// `mount` (default `default`): path segments below `auth/` of letters, digits, `_`, `-` and `.`,
/// none empty nor a dot segment, so it cannot climb out of `auth/`.
fn checked_mount(mount: Option<&str>, default: &str) -> Result<String, (String, String)> {
    let mount = mount.unwrap_or(default).trim_matches('/');
    let fits = !mount.is_empty()
        && mount.split('/').all(|segment| {
            !matches!(segment, "" | "." | "..")
                && segment.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        });
    if fits {
        Ok(mount.to_owned())
    } else {
        Err((
            "vault.auth.mount".into(),
            "must be the auth method's path below auth/: segments of letters, digits, `_`, `-` and `.`".into(),
        ))
    }
}

/// Vault's name pattern for roles (sdk/framework `GenericNameRegex`: `\w(([\w-.]+)?\w)?`).
fn is_vault_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            word(first) && word(last) && bytes.iter().all(|b| word(b) || matches!(b, b'-' | b'.'))
        }
        _ => false,
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
pub struct GithubAppConfig {
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

impl GithubAppConfig {
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
