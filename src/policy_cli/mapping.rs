//! Which issuer a raw claim set belongs to, as the broker would decide from its config: from
//! `--config`, from `--issuer`/`--kind`, or guessed from well-known `iss` values and claim shapes.
//! Whatever was used is said, since a wrong guess changes every decision.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::{Error, read};
use crate::ci::CiKind;
use crate::ci::Job;
use crate::identity::{IssuerConfig, job_from_issuer_claims};

/// How claims are mapped onto an issuer.
#[derive(Clone, Debug)]
pub enum MappingChoice {
    Explicit { issuer: String, kind: CiKind },
    Config(PathBuf),
    Infer,
}

/// A job and how its issuer was chosen.
pub struct Mapped {
    pub job: Job,
    pub how: String,
}

/// Only the broker config's issuers; the rest (and its secrets' env vars) is not needed here.
#[derive(Deserialize)]
struct IssuersOnly {
    #[serde(default)]
    issuers: Vec<IssuerConfig>,
    #[serde(default)]
    policy_dir: Option<PathBuf>,
    /// `[ci_api.<issuer>]`, by issuer: only which issuers have one is read here.
    #[serde(default)]
    ci_api: BTreeMap<String, toml::Value>,
}

pub fn parse_kind(text: &str) -> Result<CiKind, String> {
    CiKind::from_name(text).ok_or_else(|| format!("`{text}` is not one of {}", CiKind::names()))
}

pub(super) fn map(claims: &Value, choice: &MappingChoice) -> Result<Mapped, Error> {
    let iss = claims.get("iss").and_then(Value::as_str);
    let (issuer, how) = match choice {
        MappingChoice::Explicit { issuer, kind } => {
            (defaults(issuer.clone(), *kind), "given by --issuer and --kind".to_owned())
        }
        MappingChoice::Config(path) => {
            let iss = iss.ok_or_else(|| Error::Mapping("the claims have no `iss`".into()))?;
            let found = config_issuers(path)?.into_iter().find(|i| i.issuer == iss).ok_or_else(|| {
                Error::Mapping(format!(
                    "iss `{iss}` is not an issuer of {}: the broker would refuse the token as unknown_issuer",
                    path.display()
                ))
            })?;
            let how = format!("iss `{iss}` found in {}", path.display());
            (found, how)
        }
        MappingChoice::Infer => {
            let (kind, why) = infer(iss, claims).ok_or_else(|| {
                Error::Mapping(
                    "cannot tell which CI issued these claims; hint: pass --config FILE or --issuer NAME --kind KIND"
                        .into(),
                )
            })?;
            let how = format!(
                "inferred from {why}; issuer name `{}` assumed (pass --config or --issuer if the broker names it differently)",
                kind.name()
            );
            (defaults(kind.name().to_owned(), kind), how)
        }
    };
    let kind = issuer.kind;
    let job = job_from_issuer_claims(&issuer, claims.clone())
        .map_err(|source| Error::Identity { kind: kind.name(), source })?;
    let how = format!("issuer `{}`, kind {}: {how}", issuer.name, kind.name());
    Ok(Mapped { job, how })
}

/// An issuer known only by its name and kind: its claims have the CI's default names.
fn defaults(name: String, kind: CiKind) -> IssuerConfig {
    IssuerConfig {
        name,
        kind,
        issuer: String::new(),
        jwks_url: None,
        algorithms: Vec::new(),
        max_token_lifetime: None,
        audience: None,
        claim_names: Default::default(),
        controller_url: None,
    }
}

pub(super) fn config_issuers(path: &Path) -> Result<Vec<IssuerConfig>, Error> {
    let doc: IssuersOnly = toml::from_str(&read(path)?)
        .map_err(|e| Error::Claims { path: path.display().to_string(), message: e.to_string() })?;
    Ok(doc.issuers)
}

/// The issuers the config gives a CI API (`[ci_api.<issuer>]`).
pub(super) fn config_ci_apis(path: &Path) -> Result<BTreeSet<String>, Error> {
    let doc: IssuersOnly = toml::from_str(&read(path)?)
        .map_err(|e| Error::Claims { path: path.display().to_string(), message: e.to_string() })?;
    Ok(doc.ci_api.into_keys().collect())
}

pub(super) fn config_policy_dir(path: &Path) -> Option<PathBuf> {
    let doc: IssuersOnly = toml::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let base = path.parent().unwrap_or(Path::new("."));
    doc.policy_dir.map(|dir| base.join(dir))
}

/// Hosted issuers by their documented `iss`; self-hosted ones (GitLab, GitHub Enterprise Server)
/// by the claims only their tokens carry.
fn infer(iss: Option<&str>, claims: &Value) -> Option<(CiKind, String)> {
    if let Some(iss) = iss {
        let hosted = CiKind::ALL.into_iter().filter_map(|kind| Some((kind.ci().hosted_issuer?, kind)));
        for (base, kind) in hosted {
            let below = iss.strip_prefix(base).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
            if below {
                return Some((kind, format!("iss `{iss}`")));
            }
        }
    }
    CiKind::ALL
        .into_iter()
        .map(|kind| (kind.ci().telling_claim, kind))
        .find(|(claim, _)| claims.get(claim).is_some())
        .map(|(claim, kind)| (kind, format!("the `{claim}` claim")))
}
