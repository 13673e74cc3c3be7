//! Which issuer a raw claim set belongs to, as the broker would decide from its config: from
//! `--config`, from `--issuer`/`--kind`, or guessed from well-known `iss` values and claim shapes.
//! Whatever was used is said, since a wrong guess changes every decision.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::{Error, read};
use crate::identity::{IssuerConfig, job_from_claims};
use crate::job::{CiKind, Job};

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
}

pub fn parse_kind(text: &str) -> Result<CiKind, String> {
    serde_json::from_value(Value::String(text.to_owned()))
        .map_err(|_| format!("`{text}` is not one of github, gitlab, buildkite, circleci"))
}

pub(super) fn map(claims: &Value, choice: &MappingChoice) -> Result<Mapped, Error> {
    let iss = claims.get("iss").and_then(Value::as_str);
    let (issuer, kind, how) = match choice {
        MappingChoice::Explicit { issuer, kind } => (issuer.clone(), *kind, "given by --issuer and --kind".to_owned()),
        MappingChoice::Config(path) => {
            let iss = iss.ok_or_else(|| Error::Mapping("the claims have no `iss`".into()))?;
            let found = config_issuers(path)?.into_iter().find(|i| i.issuer == iss).ok_or_else(|| {
                Error::Mapping(format!(
                    "iss `{iss}` is not an issuer of {}: the broker would refuse the token as unknown_issuer",
                    path.display()
                ))
            })?;
            let how = format!("iss `{iss}` found in {}", path.display());
            (found.name, found.kind, how)
        }
        MappingChoice::Infer => {
            let (kind, why) = infer(iss, claims).ok_or_else(|| {
                Error::Mapping(
                    "cannot tell which CI issued these claims; hint: pass --config FILE or --issuer NAME --kind KIND"
                        .into(),
                )
            })?;
            let issuer = kind_name(kind).to_owned();
            let how = format!(
                "inferred from {why}; issuer name `{issuer}` assumed (pass --config or --issuer if the broker names it differently)"
            );
            (issuer, kind, how)
        }
    };
    let job = job_from_claims(kind, &issuer, claims.clone())
        .map_err(|source| Error::Identity { kind: kind_name(kind), source })?;
    let how = format!("issuer `{issuer}`, kind {}: {how}", kind_name(kind));
    Ok(Mapped { job, how })
}

pub(super) fn kind_name(kind: CiKind) -> &'static str {
    match kind {
        CiKind::Github => "github",
        CiKind::Gitlab => "gitlab",
        CiKind::Buildkite => "buildkite",
        CiKind::Circleci => "circleci",
    }
}

fn config_issuers(path: &Path) -> Result<Vec<IssuerConfig>, Error> {
    let doc: IssuersOnly = toml::from_str(&read(path)?)
        .map_err(|e| Error::Claims { path: path.display().to_string(), message: e.to_string() })?;
    Ok(doc.issuers)
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
        let known = [
            ("https://token.actions.githubusercontent.com", CiKind::Github),
            ("https://gitlab.com", CiKind::Gitlab),
            ("https://agent.buildkite.com", CiKind::Buildkite),
            ("https://oidc.circleci.com/org", CiKind::Circleci),
        ];
        for (base, kind) in known {
            let below = iss.strip_prefix(base).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
            if below {
                return Some((kind, format!("iss `{iss}`")));
            }
        }
    }
    let shapes: [(&str, CiKind); 4] = [
        ("check_run_id", CiKind::Github),
        ("job_project_path", CiKind::Gitlab),
        ("pipeline_slug", CiKind::Buildkite),
        ("oidc.circleci.com/job-id", CiKind::Circleci),
    ];
    shapes
        .into_iter()
        .find(|(claim, _)| claims.get(claim).is_some())
        .map(|(claim, kind)| (kind, format!("the `{claim}` claim")))
}
