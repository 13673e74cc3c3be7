//! `[vault]`: the broker's token valid (`auth/token/lookup-self`), its TTL and renewability, its
//! capabilities on what every exchange and revocation calls (`sys/capabilities-self`), and, per
//! role, a token minted with the role's policies and revoked by accessor, as an exchange does,
//! whose capabilities on the role's `secret_path` are asked for.
//!
//! Vault's API: `GET auth/token/lookup-self` answers `data.ttl` (seconds left, 0 for a token
//! that never expires), `data.renewable`, `data.policies`; `POST sys/capabilities-self` with
//! `paths` answers each path's capabilities under its own key (openbao `api/sys_capabilities.go`
//! reads `data[path]`). Token create is an update on `auth/token/create`; revoking by accessor an
//! update on `auth/token/revoke-accessor` (Vault's default policy grants neither). Job tokens are
//! created against the configured token role (`auth/token/create/<role>`), whose
//! `allowed_policies` decide which policies they may get, and extended by accessor
//! (`auth/token/renew-accessor`) once recorded (docs/vault.md).

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{EXPIRY_WARNING_DAYS, Finding, roles};
use crate::backends::vault::VaultLogin;
use crate::backends::{LoginMethod, VaultConfig};
use crate::net::{HttpClient, check_url_scheme};
use crate::policy::PolicySet;

const ITEM: &str = "vault";
const REVOKE_ACCESSOR: &str = "auth/token/revoke-accessor";
const RENEW_ACCESSOR: &str = "auth/token/renew-accessor";
/// Larger than any of the answers read here.
const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// How long a trial token lives if revoking it fails.
const TRIAL_TTL: &str = "60s";

/// The broker's own Vault token, as `serve` acquires it: the one in the environment, or a login
/// by `[vault.auth]`.
pub async fn broker_token(config: &VaultConfig, http: HttpClient) -> Result<HeaderValue, String> {
    let credentials = config.credentials().map_err(|(key, message)| format!("{key}: {message}"))?;
    let timeout = Duration::from_secs(config.timeout_seconds);
    let login = VaultLogin::start(credentials, &config.address, http, timeout).await.map_err(|e| e.to_string())?;
    login.with_token(|token| async move { Ok(token) }).await.map_err(|e| e.to_string())
}

pub async fn check(config: &VaultConfig, policy: Option<&PolicySet>, http: HttpClient) -> Vec<Finding> {
    let token = match broker_token(config, http.clone()).await {
        Ok(token) => token,
        Err(message) => {
            return vec![Finding::failed(
                ITEM,
                format!("the broker cannot get its Vault token: {message}"),
                format!("set {} to the broker's Vault token, or fix [vault.auth]'s login", config.token_env),
            )];
        }
    };
    let vault = match Vault::new(config, token, http) {
        Ok(vault) => vault,
        Err(message) => return vec![Finding::failed(ITEM, message, "fix `vault.address` or the token")],
    };
    let looked_up = vault.lookup_self(config).await;
    let lookup_ok = looked_up.status != super::Status::Failed;
    let mut findings = vec![looked_up];
    if !lookup_ok {
        return findings;
    }
    // Roles bound to the job's address mint through token roles the broker writes per block.
    let binds = roles(policy).any(|role| role.vault.is_some() && role.bind.is_some());
    findings.push(vault.capabilities(binds.then_some(config.token_role.as_deref())).await);
    let trials = roles(policy)
        .filter_map(|role| role.vault.as_ref().map(|scope| (role.name.as_str(), scope)))
        .map(|(name, scope)| vault.trial(name, &scope.policies, scope.secret_path.as_deref()));
    findings.extend(futures_util::future::join_all(trials).await);
    findings
}

struct Vault {
    address: String,
    http: HttpClient,
    token: HeaderValue,
    timeout: Duration,
    /// Where job tokens are created: the token role's path, or the plain create.
    create: String,
    /// Whether the broker logs in (a method of `[vault.auth]`) rather than using a static token.
    logs_in: bool,
}

#[derive(Deserialize)]
struct LookupSelf {
    data: TokenData,
}

#[derive(Deserialize)]
struct TokenData {
    #[serde(default)]
    ttl: i64,
    #[serde(default)]
    renewable: bool,
    #[serde(default)]
    policies: Vec<String>,
}

#[derive(Deserialize, Default)]
struct Refusal {
    #[serde(default)]
    errors: Vec<String>,
}

#[derive(Deserialize)]
struct Created {
    auth: CreatedAuth,
}

#[derive(Deserialize)]
struct CreatedAuth {
    client_token: SecretString,
    accessor: String,
}

/// Vault's errors, bounded and without control characters: they are Vault's words, never a token.
fn refusal(status: StatusCode, body: &[u8]) -> String {
    let errors = serde_json::from_slice::<Refusal>(body).unwrap_or_default().errors.join("; ");
    let errors: String = errors.chars().filter(|c| !c.is_control()).take(300).collect();
    format!("HTTP {}{}", status.as_u16(), if errors.is_empty() { String::new() } else { format!(": {errors}") })
}

fn header(token: &SecretString) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(token.expose_secret())
        .map_err(|_| "the Vault token is not a valid header value".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

impl Vault {
    fn new(config: &VaultConfig, token: HeaderValue, http: HttpClient) -> Result<Self, String> {
        let address = config.address.trim_end_matches('/').to_owned();
        check_url_scheme(&address)?;
        let timeout = Duration::from_secs(config.timeout_seconds);
        let create = match &config.token_role {
            Some(role) => format!("auth/token/create/{role}"),
            None => "auth/token/create".to_owned(),
        };
        let logs_in = !matches!(config.login_method(), Ok(LoginMethod::Token));
        Ok(Self { address, http, token, timeout, create, logs_in })
    }

    fn url(&self, path: &str) -> Result<url::Url, String> {
        check_url_scheme(&format!("{}/v1/{path}", self.address))
    }

    async fn get(&self, path: &str) -> Result<(StatusCode, Vec<u8>), String> {
        let url = self.url(path)?;
        self.http.get_with_secret_header(&url, ("X-Vault-Token", &self.token), self.timeout, MAX_ANSWER_BYTES).await
    }

    async fn post(&self, path: &str, token: &HeaderValue, body: &Value) -> Result<(StatusCode, Vec<u8>), String> {
        let url = self.url(path)?;
        self.http
            .post_json_with_secret_header(&url, ("X-Vault-Token", token), body, self.timeout, MAX_ANSWER_BYTES)
            .await
    }

    async fn lookup_self(&self, config: &VaultConfig) -> Finding {
        let unreachable = |reason: String| {
            Finding::failed(
                ITEM,
                format!("cannot reach {}: {reason}", self.address),
                "check `vault.address`, and that Vault is up and unsealed",
            )
        };
        let (status, body) = match self.get("auth/token/lookup-self").await {
            Ok(answer) => answer,
            Err(reason) => return unreachable(reason),
        };
        if status == StatusCode::FORBIDDEN || status == StatusCode::UNAUTHORIZED {
            return Finding::failed(
                ITEM,
                format!("the broker's token is refused ({})", refusal(status, &body)),
                format!("give the broker a valid token in {}: this one is wrong, expired or revoked", config.token_env),
            );
        }
        if !status.is_success() {
            return unreachable(refusal(status, &body));
        }
        let data = match serde_json::from_slice::<LookupSelf>(&body) {
            Ok(lookup) => lookup.data,
            Err(e) => return unreachable(format!("the answer to lookup-self does not parse: {e}")),
        };
        let policies = format!("policies {}", data.policies.join(", "));
        if data.policies.iter().any(|policy| policy == "root") {
            return Finding::warn(
                ITEM,
                format!("token valid; {policies}"),
                "a root token can do anything in Vault; give the broker a token with only the policy it needs (docs/operations.md)",
            );
        }
        if data.ttl == 0 {
            return Finding::ok(ITEM, format!("token valid, never expires; {policies}"));
        }
        let days = data.ttl / 86_400;
        let lifetime = if days > 0 { format!("{days} days") } else { format!("{} minutes", data.ttl / 60) };
        let renewal = if data.renewable { "renewable" } else { "not renewable" };
        let detail = format!("token valid, expires in {lifetime}, {renewal}; {policies}");
        // The broker renews a renewable token and logs in again by a login method; only a static
        // token it cannot renew runs out.
        if !self.logs_in && !data.renewable && days < EXPIRY_WARNING_DAYS {
            return Finding::warn(
                ITEM,
                detail,
                "the broker cannot renew this token: give it a renewable one, or log in with [vault.auth] method = \"approle\" or \"kubernetes\" (docs/vault.md)",
            );
        }
        Finding::ok(ITEM, detail)
    }

    /// Update (or root) on token create, revoke-accessor and renew-accessor.
    /// The token's capabilities on what exchanges and revocations call; with `bound` (roles with
    /// `bind_to_address`, and the configured token role if any), also on what minting a bound
    /// token calls: reading the token role, writing a bound role, creating a token through it
    /// (asked of one example block's role name, which the policy's glob covers).
    async fn capabilities(&self, bound: Option<Option<&str>>) -> Finding {
        let item = "vault capabilities";
        let mut needed: Vec<(String, &'static str)> = [self.create.as_str(), REVOKE_ACCESSOR, RENEW_ACCESSOR]
            .into_iter()
            .map(|path| (path.to_owned(), "update"))
            .collect();
        if let Some(token_role) = bound {
            let example = format!("{}-bound-192-0-2-1-32", token_role.unwrap_or("ci-creds"));
            if let Some(role) = token_role {
                needed.push((format!("auth/token/roles/{role}"), "read"));
            }
            needed.push((format!("auth/token/roles/{example}"), "create"));
            needed.push((format!("auth/token/roles/{example}"), "update"));
            needed.push((format!("auth/token/roles/{example}"), "delete"));
            needed.push(("auth/token/roles".to_owned(), "list"));
            needed.push((format!("auth/token/create/{example}"), "update"));
        }
        let paths: Vec<&str> = needed.iter().map(|(path, _)| path.as_str()).collect();
        let body = json!({ "paths": paths });
        let answer = match self.post("sys/capabilities-self", &self.token, &body).await {
            Ok((status, body)) if status.is_success() => {
                serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string())
            }
            Ok((status, body)) => Err(refusal(status, &body)),
            Err(reason) => Err(reason),
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(reason) => {
                return Finding::failed(
                    item,
                    format!("sys/capabilities-self: {reason}"),
                    "grant update on sys/capabilities-self (Vault's default policy does)",
                );
            }
        };
        let mut missing = Vec::new();
        let mut granted = Vec::new();
        for (path, capability) in &needed {
            let capabilities = path_capabilities(&answer, path);
            if capabilities.iter().any(|c| c == capability || c == "root") {
                if !granted.iter().any(|line: &String| line.starts_with(&format!("{path} ("))) {
                    granted.push(format!("{path} ({})", capabilities.join(", ")));
                }
            } else {
                missing.push(format!("{capability} on {path}"));
            }
        }
        if !missing.is_empty() {
            let missing = missing.join(" and ");
            return Finding::failed(
                item,
                format!("token lacks {missing}"),
                "grant it in the broker's policy (deploy/vault/ci-creds-broker.hcl, docs/vault.md)",
            );
        }
        Finding::ok(item, granted.join("; "))
    }

    /// Mints a short-lived token with `policies`, as an exchange does (and with Vault's default
    /// policy, so it may ask its own capabilities), asks its capabilities on `secret_path`, and
    /// revokes it by accessor.
    async fn trial(&self, role: &str, policies: &[String], secret_path: Option<&str>) -> Finding {
        let item = format!("vault role {role}");
        let body = json!({
            "policies": policies,
            "ttl": TRIAL_TTL,
            "explicit_max_ttl": TRIAL_TTL,
            "renewable": false,
            "display_name": "ci-creds-check",
            "meta": { "role": role, "purpose": "ci-creds check" },
        });
        let created = match self.post(&self.create, &self.token, &body).await {
            Ok((status, body)) if status.is_success() => {
                serde_json::from_slice::<Created>(&body).map(|created| created.auth).map_err(|e| e.to_string())
            }
            Ok((status, body)) => Err(refusal(status, &body)),
            Err(reason) => Err(reason),
        };
        let listed = policies.join(", ");
        let created = match created {
            Ok(created) => created,
            Err(reason) => {
                return Finding::failed(
                    item,
                    format!("cannot create a token with policies {listed}: {reason}"),
                    "list these policies in the token role's allowed_policies (docs/vault.md); without a token role, give the broker's token these policies",
                );
            }
        };
        let secret = match secret_path {
            None => Ok(None),
            Some(path) => self.capabilities_of(&created.client_token, path).await.map(|caps| Some((path, caps))),
        };
        let revoked = match self.post(REVOKE_ACCESSOR, &self.token, &json!({ "accessor": created.accessor })).await {
            Ok((status, _)) if status.is_success() => Ok(()),
            Ok((status, body)) => Err(refusal(status, &body)),
            Err(reason) => Err(reason),
        };
        if let Err(reason) = revoked {
            return Finding::failed(
                item,
                format!("a token with policies {listed} was created but not revoked by accessor: {reason}"),
                "grant update on auth/token/revoke-accessor in the broker's policy",
            );
        }
        match secret {
            Ok(None) => Finding::ok(item, format!("a token with policies {listed} created and revoked")),
            Ok(Some((path, capabilities))) if capabilities.iter().any(|c| c == "read" || c == "root") => {
                Finding::ok(item, format!("a token with policies {listed} created, can read {path}, revoked"))
            }
            Ok(Some((path, capabilities))) => Finding::failed(
                item,
                format!(
                    "a token with policies {listed} cannot read {path} (capabilities: {})",
                    capabilities.join(", ")
                ),
                format!("grant read on {path} in one of the role's policies ({listed})"),
            ),
            Err(reason) => Finding::failed(
                item,
                format!("cannot ask what a token with policies {listed} may do: {reason}"),
                "check that Vault's default policy grants update on sys/capabilities-self",
            ),
        }
    }

    async fn capabilities_of(&self, token: &SecretString, path: &str) -> Result<Vec<String>, String> {
        let token = header(token)?;
        match self.post("sys/capabilities-self", &token, &json!({ "paths": [path] })).await? {
            (status, body) if status.is_success() => {
                let answer: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
                Ok(path_capabilities(&answer, path))
            }
            (status, body) => Err(refusal(status, &body)),
        }
    }
}

/// The capabilities an answer of `sys/capabilities-self` gives `path`: under `data` or at the
/// top level, by the path's own key.
fn path_capabilities(answer: &Value, path: &str) -> Vec<String> {
    let list = answer.get("data").and_then(|data| data.get(path)).or_else(|| answer.get(path));
    list.and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).take(16).map(str::to_owned).collect())
        .unwrap_or_default()
}
