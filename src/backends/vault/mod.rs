//! Vault/OpenBao: a token per job with exactly the role's policies, its TTL and metadata naming
//! the job; revoked by accessor. The broker's own token comes from [`login`]. A job's token lives
//! only a short grace until its accessor is recorded (`mint_grace.rs`).

mod bound;
mod login;
mod mint_grace;

use std::time::Duration;

use reqwest::header::HeaderValue;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use url::Url;

pub use self::login::VaultLogin;
pub use super::config::VaultConfig;
use super::{Backend, Credential, Error, MintRequest, Minted, RevokeHandle, VaultCredentials};
use crate::net::HttpClient;
use crate::policy::VaultScope;

const NAME: &str = "vault";

pub struct VaultBackend {
    address: String,
    http: HttpClient,
    /// The token create, its URL parsed once: the exchange's one Vault call, where a general
    /// client's request building (vaultrs's: URL parsed, headers and middleware per call) cost
    /// about a hundred allocations an exchange. `auth/token/create/<token_role>` when the config names a token
    /// role: see [`token_create_url`].
    token_create: Url,
    revoke_accessor: Url,
    /// `auth/token/renew-accessor`, which ends a token's mint grace.
    renew_accessor: Url,
    /// The broker's own token, kept alive by its login.
    login: VaultLogin,
    timeout: Duration,
    /// How long a job's token lives until its accessor is recorded and it is extended.
    mint_grace: Duration,
    /// Token roles bound to address blocks, for roles with `bind_to_address`.
    bound: bound::BoundRoles,
}

/// `auth/token/create`'s body: exactly the role's policies, its TTL, metadata naming the job.
#[derive(Serialize)]
struct TokenCreate<'a> {
    policies: &'a [String],
    meta: TokenMeta<'a>,
    no_default_policy: bool,
    ttl: &'a str,
    explicit_max_ttl: &'a str,
    renewable: bool,
    display_name: &'a str,
}

#[derive(Serialize)]
struct TokenMeta<'a> {
    issuer: &'a str,
    job_id: &'a str,
    repository: &'a str,
    role: &'a str,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    git_ref: Option<&'a str>,
}

#[derive(Deserialize)]
struct TokenCreated {
    auth: CreatedAuth,
}

#[derive(Deserialize)]
struct CreatedAuth {
    client_token: String,
    accessor: String,
}

/// Vault's refusal: `{"errors": [...]}`.
#[derive(Deserialize, Default)]
struct Refusal {
    #[serde(default)]
    errors: Vec<String>,
}

/// Larger than any token create's answer.
const MAX_TOKEN_BYTES: usize = 64 * 1024;

impl VaultBackend {
    /// A backend acting with the broker's own Vault `token`, used as it is.
    pub fn new(config: &VaultConfig, token: &SecretString, http: HttpClient) -> Result<Self, Error> {
        let timeout = Duration::from_secs(config.timeout_seconds);
        let login = VaultLogin::new(VaultCredentials::Token(token.clone()), &config.address, http.clone(), timeout)?;
        Self::with_login(config, login, http)
    }

    /// A backend acting with the token `login` keeps.
    pub fn with_login(config: &VaultConfig, login: VaultLogin, http: HttpClient) -> Result<Self, Error> {
        let address = config.address.trim_end_matches('/').to_owned();
        let config_error = |reason: String| Error::Refused { backend: NAME, code: "config".into(), reason };
        let url = |path: &str| {
            crate::net::check_url_scheme(&format!("{address}/v1/{path}"))
                .map_err(|reason| config_error(format!("vault.address: {reason}")))
        };
        let token_create = url(&token_create_path(config.token_role.as_deref()))?;
        let revoke_accessor = url("auth/token/revoke-accessor")?;
        let renew_accessor = url("auth/token/renew-accessor")?;
        let timeout = Duration::from_secs(config.timeout_seconds);
        let mint_grace = Duration::from_secs(config.mint_grace_seconds);
        let bound = bound::BoundRoles::new(&address, config.token_role.as_deref())?;
        Ok(Self { address, http, token_create, revoke_accessor, renew_accessor, login, timeout, mint_grace, bound })
    }

    /// The broker's login, for `serve` to keep alive.
    pub fn login(&self) -> &VaultLogin {
        &self.login
    }

    /// Creates the job's token at `url`: its secret and its accessor.
    async fn create_token(&self, url: &Url, body: &TokenCreate<'_>) -> Result<CreatedAuth, Error> {
        let answer = self
            .login
            .with_token(|token| async move { self.post_as_broker(url, &token, body, MAX_TOKEN_BYTES).await })
            .await?;
        let created: TokenCreated = serde_json::from_slice(&answer).map_err(|e| Error::Unavailable {
            backend: NAME,
            reason: format!("the token create's answer does not parse: {e}"),
        })?;
        Ok(created.auth)
    }

    /// POSTs `body` to `url` with the broker's `token`: the answer's body on success, Vault's
    /// refusal or an outage otherwise.
    async fn post_as_broker<B: Serialize + ?Sized>(
        &self,
        url: &Url,
        token: &HeaderValue,
        body: &B,
        max_bytes: usize,
    ) -> Result<Vec<u8>, Error> {
        let (status, answer) = self
            .http
            .post_json_with_secret_header(url, ("X-Vault-Token", token), body, self.timeout, max_bytes)
            .await
            .map_err(|_| Error::Unavailable { backend: NAME, reason: "cannot reach Vault".into() })?;
        if status.is_success() {
            return Ok(answer);
        }
        let errors = serde_json::from_slice::<Refusal>(&answer).unwrap_or_default().errors;
        Err(answered(status.as_u16(), &errors))
    }
}

/// Where job tokens are created. With a token role configured, `auth/token/create/<role>`: the
/// role makes them orphans (`orphan=true`), so they outlive the broker's own login token, which
/// is replaced at every login and expires (a token's children are revoked with it: OpenBao
/// api-docs/auth/token.mdx, "Revoke a token"); and the role's `allowed_policies` bound what the
/// broker may grant ("tokens can be created with any subset of the policies in this list",
/// "Create/Update token role"). The alternative, `auth/token/create-orphan`, needs `sudo` on that
/// path, and a sudo caller may grant any policy but `root` ("policies ... must be a subset of the
/// policies belonging to the token making the request, unless the calling token is root or
/// contains sudo capabilities"; internal/vault/token_store.go `resolveTokenPolicies`): a broker
/// compromise would be a Vault compromise. Without a token role: `auth/token/create`, children of
/// the broker's token, as before (a static token only).
fn token_create_path(token_role: Option<&str>) -> String {
    match token_role {
        Some(role) => format!("auth/token/create/{role}"),
        None => "auth/token/create".to_owned(),
    }
}

impl VaultBackend {
    /// Reads `path` with the job's own token, so the secret's lease is that token's child and
    /// Vault revokes it with the token. Only `data` is kept; it is a secret.
    async fn read_dynamic_secret(&self, path: &str, token: &SecretString) -> Result<SecretString, Error> {
        let url = format!("{}/v1/{path}", self.address);
        let answer: serde_json::Value = self
            .http
            .get_json_with_secret_header(&url, "X-Vault-Token", token, MAX_SECRET_BYTES)
            .await
            .map_err(|reason| Error::Unavailable { backend: NAME, reason: format!("reading {path}: {reason}") })?;
        let data = answer.get("data").filter(|data| data.is_object()).ok_or_else(|| Error::Refused {
            backend: NAME,
            code: "no_data".into(),
            reason: format!("{path} returned no `data`"),
        })?;
        Ok(SecretString::from(data.to_string()))
    }
}

impl VaultBackend {
    /// Creates a token through the role bound to `block`. A role this process made that Vault
    /// no longer knows (deleted by hand) is made again, once.
    async fn create_bound_token(&self, block: ipnet::IpNet, body: &TokenCreate<'_>) -> Result<CreatedAuth, Error> {
        let url = self.bound_create_url(block).await?;
        match self.create_token(&url, body).await {
            // OpenBao answers 400 "unknown role" for a token create through a missing role.
            Err(Error::Refused { code, reason, .. }) if code == "HTTP 400" && reason.contains("unknown role") => {
                self.bound.forget(block);
                let url = self.bound_create_url(block).await?;
                self.create_token(&url, body).await
            }
            other => other,
        }
    }
}

/// Larger than any dynamic secret's answer.
const MAX_SECRET_BYTES: usize = 256 * 1024;

impl Backend for VaultBackend {
    type Scope = VaultScope;

    async fn mint(&self, request: MintRequest<'_, VaultScope>) -> Result<Minted, Error> {
        let job = request.job;
        let lifetime = mint_grace::lifetime(request.ttl, self.mint_grace);
        let ttl = format!("{}s", lifetime.initial_seconds);
        let max_ttl = format!("{}s", lifetime.max_seconds);
        let display_name = format!("ci-creds-{}", request.role);
        let created = std::time::Instant::now();
        let body = TokenCreate {
            policies: &request.scope.policies,
            meta: TokenMeta {
                issuer: &job.issuer,
                job_id: &job.job_id,
                repository: &job.repository,
                role: request.role,
                git_ref: job.git_ref.as_deref(),
            },
            no_default_policy: true,
            ttl: &ttl,
            explicit_max_ttl: &max_ttl,
            // Renewable only so that the broker can end its grace: the explicit max TTL is
            // the role's, and no renewal, the job's own included, passes it.
            renewable: lifetime.extend,
            display_name: &display_name,
        };
        let auth = match request.bind {
            None => self.create_token(&self.token_create, &body).await?,
            Some(block) => self.create_bound_token(block, &body).await?,
        };
        let token = SecretString::from(auth.client_token);
        let handle = RevokeHandle::Vault { accessor: auth.accessor.clone() };
        let secret = match &request.scope.secret_path {
            None => None,
            Some(path) => match self.read_dynamic_secret(path, &token).await {
                Ok(secret) => Some(secret),
                Err(error) => {
                    // The token is of no use without its secret: take it back before failing.
                    if let Err(revoke_error) = self.revoke(&handle).await {
                        tracing::warn!(error = %revoke_error, "revoking a token whose secret could not be read failed");
                    }
                    return Err(error);
                }
            },
        };
        Ok(Minted {
            credential: Credential::Vault {
                address: self.address.clone(),
                token,
                accessor: auth.accessor.clone(),
                secret,
            },
            confirmation: Self::confirmation(&auth.accessor, request.ttl, &lifetime, created),
            handle: RevokeHandle::Vault { accessor: auth.accessor },
            expires_at: None,
        })
    }

    async fn revoke(&self, handle: &RevokeHandle) -> Result<(), Error> {
        let RevokeHandle::Vault { accessor } = handle else { return Err(Error::WrongHandle(NAME)) };
        let body = serde_json::json!({ "accessor": accessor });
        let revoked = self
            .login
            .with_token(|token| {
                let body = &body;
                async move { self.post_as_broker(&self.revoke_accessor, &token, body, MAX_TOKEN_BYTES).await }
            })
            .await;
        match revoked {
            Ok(_) => Ok(()),
            // Vault answers 400 for an accessor it no longer knows: the token is already gone.
            Err(Error::Refused { code, .. }) if code == "HTTP 400" => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn check(&self) -> Result<(), Error> {
        // Read as JSON-less status: vaultrs's health type required fields OpenBao does not send. A sealed or
        // standby server answers non-2xx here.
        let url = format!("{}/v1/sys/health", self.address);
        self.http.get_ok(&url).await.map_err(|reason| Error::Unavailable { backend: NAME, reason })
    }
}

/// Vault's answer of HTTP `code` with its `errors`: a refusal (4xx) or an outage. Only the
/// status and Vault's error strings are kept: they carry no token.
fn answered(code: u16, errors: &[String]) -> Error {
    if (400..500).contains(&code) {
        Error::Refused { backend: NAME, code: format!("HTTP {code}"), reason: errors.join("; ") }
    } else {
        Error::Unavailable { backend: NAME, reason: format!("HTTP {code}: {}", errors.join("; ")) }
    }
}
