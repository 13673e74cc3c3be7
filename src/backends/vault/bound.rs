//! Token roles that bind job tokens to an address block: one per block, made on demand with the
//! settings of the broker's usual token role plus `token_bound_cidrs`, and remembered so that a
//! later job from the same block costs no Vault call.
//!
//! OpenBao internal/vault/token_store.go (commit df6ce2cebaa823979215c116a16820aa913fe3b1):
//! `handleCreateCommon` copies the role's `TokenBoundCIDRs` onto the token entry at creation
//! (`te.BoundCIDRs = role.TokenBoundCIDRs`, lines 3063-3065), and request_handling.go
//! (lines 313-320) checks the entry's own CIDRs at every request, so a token stays bound even if
//! its role is deleted. But renewing a token whose role is gone fails ("original token role %q
//! could not be found, not renewing", token_store.go line 3467): the broker's mint-grace extension
//! (`renew-accessor`) and any renewal by the job need the role to exist, so a bound role must
//! outlive every lease minted through it that is pending or unexpired.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Mutex;

use ipnet::IpNet;
use reqwest::Method;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;
use url::Url;

use super::{MAX_TOKEN_BYTES, NAME, VaultBackend, answered};
use crate::backends::Error;

/// The configured token role's settings that a bound role carries too, so that binding changes
/// where a token works and nothing else (OpenBao api-docs/auth/token.mdx, "Create/Update token
/// role": the parameters of the same names).
const COPIED_SETTINGS: &[&str] = &[
    "allowed_policies",
    "disallowed_policies",
    "allowed_policies_glob",
    "disallowed_policies_glob",
    "orphan",
    "renewable",
    "token_explicit_max_ttl",
    "token_period",
    "token_type",
];

/// Role name prefix when no `[vault] token_role` is configured.
const DEFAULT_BASE: &str = "ci-creds";

pub(super) struct BoundRoles {
    /// `<token_role>-bound` or `ci-creds-bound`: every bound role's name starts so, which the
    /// broker's Vault policy grants (`deploy/vault/ci-creds-broker.hcl`).
    prefix: String,
    /// `auth/token/roles/<token_role>`, read once for the settings bound roles copy.
    configured_role: Option<Url>,
    settings: OnceCell<Map<String, Value>>,
    /// Blocks whose role this process made (or found made) since it started.
    made: Mutex<HashSet<IpNet>>,
    address: String,
}

impl BoundRoles {
    pub(super) fn new(address: &str, token_role: Option<&str>) -> Result<Self, Error> {
        let configured_role = match token_role {
            Some(role) => Some(parse_url(address, &format!("auth/token/roles/{role}"))?),
            None => None,
        };
        Ok(Self {
            prefix: format!("{}-bound", token_role.unwrap_or(DEFAULT_BASE)),
            configured_role,
            settings: OnceCell::new(),
            made: Mutex::default(),
            address: address.to_owned(),
        })
    }

    /// The token role for `block`: `<prefix>-127-0-0-5-32`, `<prefix>-v6-2001-db8---64`. Dots and
    /// colons become dashes (Vault role names are word characters, dashes and dots), and IPv6
    /// names are marked so that no IPv4 block's name can equal an IPv6 block's.
    pub(super) fn role_name(&self, block: IpNet) -> String {
        let address = block.addr().to_string().replace(['.', ':'], "-");
        match block.addr() {
            IpAddr::V4(_) => format!("{}-{address}-{}", self.prefix, block.prefix_len()),
            IpAddr::V6(_) => format!("{}-v6-{address}-{}", self.prefix, block.prefix_len()),
        }
    }

    fn is_made(&self, block: IpNet) -> bool {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).contains(&block)
    }

    fn remember(&self, block: IpNet) {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).insert(block);
    }

    /// Forgets a block whose role Vault no longer has (deleted outside the broker).
    pub(super) fn forget(&self, block: IpNet) {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).remove(&block);
    }
}

fn parse_url(address: &str, path: &str) -> Result<Url, Error> {
    crate::net::check_url_scheme(&format!("{address}/v1/{path}")).map_err(|reason| Error::Refused {
        backend: NAME,
        code: "config".into(),
        reason: format!("vault.address: {reason}"),
    })
}

impl VaultBackend {
    /// Where a token bound to `block` is created, making its role first if this process has not.
    pub(super) async fn bound_create_url(&self, block: IpNet) -> Result<Url, Error> {
        let bound = &self.bound;
        let name = bound.role_name(block);
        if !bound.is_made(block) {
            self.write_bound_role(&name, block).await?;
            bound.remember(block);
        }
        parse_url(&bound.address, &format!("auth/token/create/{name}"))
    }

    async fn write_bound_role(&self, name: &str, block: IpNet) -> Result<(), Error> {
        let mut body = self.bound.settings.get_or_try_init(|| self.configured_settings()).await?.clone();
        body.insert("token_bound_cidrs".into(), Value::from(vec![block.to_string()]));
        let url = parse_url(&self.bound.address, &format!("auth/token/roles/{name}"))?;
        self.login
            .with_token(|token| {
                let (url, body) = (&url, &body);
                async move { self.post_as_broker(url, &token, body, MAX_TOKEN_BYTES).await }
            })
            .await?;
        tracing::info!(role = %name, %block, "made a Vault token role bound to an address block");
        Ok(())
    }

    /// The configured token role's settings (read once), or, without one, those of the usual
    /// `auth/token/create`: children of the broker's token, limited to its policies.
    async fn configured_settings(&self) -> Result<Map<String, Value>, Error> {
        let Some(url) = &self.bound.configured_role else { return Ok(Map::new()) };
        let answer = self
            .call_as_broker(Method::GET, url, MAX_TOKEN_BYTES)
            .await?
            .ok_or_else(|| answered(404, &["the configured token role does not exist".to_owned()]))?;
        let data = serde_json::from_slice::<Value>(&answer)
            .ok()
            .and_then(|answer| answer.get("data").and_then(Value::as_object).cloned())
            .ok_or_else(|| Error::Unavailable {
                backend: NAME,
                reason: "the configured token role's answer has no `data`".into(),
            })?;
        Ok(COPIED_SETTINGS
            .iter()
            .filter_map(|key| {
                data.get(*key).filter(|value| !value.is_null()).map(|value| ((*key).to_owned(), value.clone()))
            })
            .collect())
    }
}

/// At most this many role names are read from one LIST answer (a bound role per block).
const MAX_LISTED_ROLES: usize = 10_000;

impl VaultBackend {
    /// Deletes the token roles named with this broker's bound prefix whose block is not in
    /// `in_use`, and forgets them, so that the next exchange from such a block makes its role
    /// again. `LIST auth/token/roles` answers every token role's name in `data.keys` (OpenBao
    /// api-docs/auth/token.mdx, "List token roles"); a 404, which Vault's HTTP API gives a LIST of
    /// nothing, is read as no role (not checked in OpenBao's source).
    pub async fn delete_unused_bound_roles(&self, in_use: &[IpNet]) -> Result<usize, Error> {
        let keep: HashSet<String> = in_use.iter().map(|block| self.bound.role_name(*block)).collect();
        self.bound
            .made
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|block| keep.contains(&self.bound.role_name(*block)));
        let prefix = format!("{}-", self.bound.prefix);
        let unused: Vec<String> = self
            .list_roles()
            .await?
            .into_iter()
            .filter(|name| name.starts_with(&prefix) && !keep.contains(name))
            .collect();
        let mut deleted = 0;
        for name in unused {
            // A name comes from Vault's answer: one path segment, or none.
            let Some(segment) = crate::net::path_segment(&name) else { continue };
            let url = parse_url(&self.bound.address, &format!("auth/token/roles/{segment}"))?;
            // A 404 is a role already gone: deleted all the same.
            self.call_as_broker(Method::DELETE, &url, MAX_TOKEN_BYTES).await?;
            tracing::info!(role = %name, "deleted a Vault token role bound to an address block no live lease uses");
            deleted += 1;
        }
        Ok(deleted)
    }

    async fn list_roles(&self) -> Result<Vec<String>, Error> {
        let url = parse_url(&self.bound.address, "auth/token/roles?list=true")?;
        let answer = self.call_as_broker(Method::GET, &url, super::MAX_SECRET_BYTES).await?;
        let Some(answer) = answer else { return Ok(Vec::new()) };
        let listed: Value = serde_json::from_slice(&answer).map_err(|e| Error::Unavailable {
            backend: NAME,
            reason: format!("the token roles' list does not parse: {e}"),
        })?;
        Ok(listed
            .get("data")
            .and_then(|data| data.get("keys"))
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Value::as_str).take(MAX_LISTED_ROLES).map(str::to_owned).collect())
            .unwrap_or_default())
    }
}

impl VaultBackend {
    /// `method` on `url` with the broker's token: the body of a 2xx answer, `None` for a 404,
    /// Vault's refusal for anything else.
    async fn call_as_broker(&self, method: Method, url: &Url, max_bytes: usize) -> Result<Option<Vec<u8>>, Error> {
        self.login
            .with_token(|token| {
                let method = method.clone();
                async move {
                    let (status, answer) = self
                        .http
                        .with_secret_header(method, url, ("X-Vault-Token", &token), self.timeout, max_bytes)
                        .await
                        .map_err(|_| Error::Unavailable { backend: NAME, reason: "cannot reach Vault".into() })?;
                    if status.is_success() {
                        return Ok(Some(answer));
                    }
                    if status.as_u16() == 404 {
                        return Ok(None);
                    }
                    let errors = serde_json::from_slice::<super::Refusal>(&answer).unwrap_or_default().errors;
                    Err(answered(status.as_u16(), &errors))
                }
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_role_after_its_block_and_the_configured_role() {
        let roles = BoundRoles::new("http://127.0.0.1:8200", Some("ci-creds-job")).unwrap();
        let block = |text: &str| text.parse::<IpNet>().unwrap();
        assert_eq!(roles.role_name(block("127.0.0.5/32")), "ci-creds-job-bound-127-0-0-5-32");
        assert_eq!(roles.role_name(block("203.0.113.0/24")), "ci-creds-job-bound-203-0-113-0-24");
        assert_eq!(roles.role_name(block("2001:db8::/64")), "ci-creds-job-bound-v6-2001-db8---64");
        let unconfigured = BoundRoles::new("http://127.0.0.1:8200", None).unwrap();
        assert_eq!(unconfigured.role_name(block("127.0.0.5/32")), "ci-creds-bound-127-0-0-5-32");
    }
}
