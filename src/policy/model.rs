//! The policy file's shape and the checks made while reading it, so that every error the
//! YAML parser reports carries the position of what is wrong. Each backend's scope is read in
//! its own file (`vault.rs`, `aws.rs`, `github_app.rs`), a rule's conditions in `rule.rs`.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::aws::{AWS_MAX_SESSION, AWS_MIN_SESSION, AwsDoc, AwsScope};
use super::aws_binding;
use super::binding::{self, AddressBinding};
use super::checked_section::from_map;
use super::github_app::{GITHUB_TOKEN_LIFETIME, GithubAppDoc, GithubAppScope};
use super::rule::Rule;
use super::tiers::RunnerTier;
use super::vault::{VaultDoc, VaultScope};

/// Which backend mints a role's credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Vault,
    Aws,
    /// GitHub App installation tokens (the `github` backend), not the GitHub Actions CI.
    #[serde(rename = "github")]
    GithubApp,
}

impl BackendKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vault => "vault",
            Self::Aws => "aws",
            Self::GithubApp => "github",
        }
    }
}

/// A named grant: what a job gets from which backend, for how long, and which jobs may have it.
#[derive(Clone, Debug)]
pub struct Role {
    pub name: String,
    pub backend: BackendKind,
    pub max_ttl: Duration,
    /// How many exchanges of one job may include this role; 0 is no cap. A stolen ID-token
    /// request mints a fresh token, with a fresh `jti`, as often as it is asked: this bounds what
    /// one job's leak can mint.
    pub max_exchanges_per_job: u32,
    pub vault: Option<VaultScope>,
    pub aws: Option<AwsScope>,
    pub github_app: Option<GithubAppScope>,
    /// Set when the role's credentials work only from the job's address block (`bind_to_address`).
    pub bind: Option<AddressBinding>,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
}

/// One policy file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDoc {
    #[serde(default)]
    pub(super) runner_tiers: Vec<RunnerTier>,
    #[serde(default)]
    pub(super) roles: Vec<RoleEntry>,
}

/// Keeps `Role` itself free of a public `Deserialize`: roles only come from `PolicySet::parse`.
pub(super) struct RoleEntry(pub(super) Role);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleDoc {
    name: String,
    backend: BackendKind,
    max_ttl: Ttl,
    #[serde(default = "default_max_exchanges_per_job")]
    max_exchanges_per_job: u32,
    #[serde(default)]
    vault: Option<VaultDoc>,
    #[serde(default)]
    aws: Option<AwsDoc>,
    #[serde(default)]
    github: Option<GithubAppDoc>,
    #[serde(default)]
    bind_to_address: bool,
    #[serde(default)]
    bind_prefix: Option<u8>,
    #[serde(default)]
    bind_prefix_v6: Option<u8>,
    #[serde(default)]
    allow: Vec<Rule>,
    #[serde(default)]
    deny: Vec<Rule>,
}

impl<'de> Deserialize<'de> for RoleEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "a role mapping", |doc: RoleDoc| {
            if doc.name.is_empty() {
                return Err("a role needs a non-empty `name`".to_owned());
            }
            let sections = [doc.vault.is_some(), doc.aws.is_some(), doc.github.is_some()];
            if sections.iter().filter(|present| **present).count() > 1 {
                return Err(format!(
                    "role `{}` has backend {} and a section for another backend; hint: keep only the `{}:` section",
                    doc.name,
                    doc.backend.as_str(),
                    doc.backend.as_str()
                ));
            }
            let (mut vault, mut aws, mut github) = (None, None, None);
            match doc.backend {
                BackendKind::Vault => match doc.vault {
                    Some(VaultDoc(scope)) => vault = Some(scope),
                    None => {
                        return Err(missing_section(
                            &doc.name,
                            "vault",
                            "vault: { policies: [...] }` naming the Vault policies its tokens get",
                        ));
                    }
                },
                BackendKind::Aws => match doc.aws {
                    Some(AwsDoc(scope)) => aws = Some(scope),
                    None => {
                        return Err(missing_section(
                            &doc.name,
                            "aws",
                            "aws: { role_arn: arn:aws:iam::ACCOUNT:role/NAME }`",
                        ));
                    }
                },
                BackendKind::GithubApp => match doc.github {
                    Some(GithubAppDoc(scope)) => github = Some(scope),
                    None => {
                        return Err(missing_section(
                            &doc.name,
                            "github",
                            "github: { owner: ORG, repositories: [NAME], permissions: { contents: read } }`",
                        ));
                    }
                },
            }
            if doc.backend == BackendKind::GithubApp && doc.max_ttl.0 > GITHUB_TOKEN_LIFETIME {
                return Err(format!(
                    "role `{}`: a github role's max_ttl must be at most 1h (GitHub's installation tokens live one hour)",
                    doc.name
                ));
            }
            if doc.backend == BackendKind::Aws && !(AWS_MIN_SESSION..=AWS_MAX_SESSION).contains(&doc.max_ttl.0) {
                return Err(format!(
                    "role `{}`: an aws role's max_ttl must be between 15m and 12h (STS's limits for AssumeRole)",
                    doc.name
                ));
            }
            let bind = binding::check(&doc.name, doc.bind_to_address, doc.bind_prefix, doc.bind_prefix_v6)?;
            if bind.is_some() {
                check_bindable(&doc.name, vault.as_ref(), aws.as_ref(), github.is_some())?;
            }
            Ok(RoleEntry(Role {
                name: doc.name,
                backend: doc.backend,
                max_ttl: doc.max_ttl.0,
                max_exchanges_per_job: doc.max_exchanges_per_job,
                vault,
                aws,
                github_app: github,
                bind,
                allow: doc.allow,
                deny: doc.deny,
            }))
        })
    }
}

/// A job asks for a role once, or a few times (a retry, a step per tool); ten leaves room for
/// that and still bounds a leaked ID-token request.
pub const DEFAULT_MAX_EXCHANGES_PER_JOB: u32 = 10;

fn default_max_exchanges_per_job() -> u32 {
    DEFAULT_MAX_EXCHANGES_PER_JOB
}

/// Whether the backend can honour `bind_to_address`: a github token cannot be bound, and a
/// dynamic secret is read from the broker's address and is not bound by Vault.
fn check_bindable(role: &str, vault: Option<&VaultScope>, aws: Option<&AwsScope>, github: bool) -> Result<(), String> {
    if github {
        return Err(format!(
            "role `{role}`: `bind_to_address` cannot hold for a github role: GitHub App installation tokens cannot be bound to an address; hint: remove `bind_to_address`, job-end revocation still applies"
        ));
    }
    if vault.is_some_and(|scope| scope.secret_path.is_some()) {
        return Err(format!(
            "role `{role}`: `bind_to_address` cannot hold with `vault.secret_path`: the broker reads the dynamic secret with the job's token from its own address, and Vault does not bind the secret itself to any address; hint: bind a role without a dynamic secret, or drop `bind_to_address`"
        ));
    }
    if let Some(scope) = aws {
        aws_binding::check_fits(role, scope.session_policy.as_deref())?;
    }
    Ok(())
}

fn missing_section(role: &str, backend: &str, example: &str) -> String {
    format!("role `{role}` has backend {backend} but no `{backend}:` section; hint: add `{example}")
}

const MAX_ROLE_TTL: Duration = Duration::from_secs(31 * 24 * 3600);

/// `max_ttl`: a humantime duration such as `15m`; zero would mint credentials that are already dead.
struct Ttl(Duration);

impl<'de> Deserialize<'de> for Ttl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TtlVisitor;
        impl Visitor<'_> for TtlVisitor {
            type Value = Ttl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration with a unit, such as 15m, 1h or 900s")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Ttl, E> {
                let ttl = humantime::parse_duration(v).map_err(|e| {
                    E::custom(format!("max_ttl `{v}` is not a duration ({e}); hint: write it like 15m, 1h or 900s"))
                })?;
                if ttl.is_zero() {
                    return Err(E::custom("max_ttl must be greater than zero; hint: write it like 15m"));
                }
                // Past any CI job's life, and far past Vault's default ceiling (32 days); without a
                // bound, `now + max_ttl` would overflow at every exchange of the role.
                if ttl > MAX_ROLE_TTL {
                    return Err(E::custom(format!(
                        "max_ttl `{v}` is over 31d; hint: a CI job's credential lives minutes or hours"
                    )));
                }
                Ok(Ttl(ttl))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Ttl, E> {
                Err(E::custom(format!("max_ttl `{v}` is not a duration with a unit; hint: write it like {v}s or 15m")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Ttl, E> {
                Err(E::custom(format!(
                    "max_ttl `{v}` is not a duration with a unit; hint: write it like 15m, 1h or 900s"
                )))
            }
        }
        d.deserialize_any(TtlVisitor)
    }
}
