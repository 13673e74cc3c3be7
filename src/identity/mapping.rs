//! Claims to `Job` for a CI kind, without verification: what the verifier does after checking the
//! signature, and what `ci-creds policy explain`/`test` do with a claim set from a file.

use serde_json::Value;

use super::{Error, IssuerConfig, claims};
use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::Job;

/// Maps already-trusted claims onto a job of the issuer named `issuer` (the name policy uses),
/// whose claims have their CI's default names.
pub fn job_from_claims(kind: CiKind, issuer: &str, claims: Value) -> Result<Job, Error> {
    map(kind, &Issuer::named(issuer), claims)
}

/// Maps already-trusted claims onto a job of the configured `issuer`, reading the claims its
/// `claim_names` say.
pub fn job_from_issuer_claims(issuer: &IssuerConfig, claims: Value) -> Result<Job, Error> {
    let named = Issuer {
        name: &issuer.name,
        claim_names: &issuer.claim_names,
        controller_url: issuer.controller_url.as_deref(),
    };
    map(issuer.kind, &named, claims)
}

/// `token_id` and `expires_at` come from `jti` and `exp` when present; the verifier sets its own.
/// The claims are kept in the job (for `claims:` conditions), so they are taken, not copied.
fn map(kind: CiKind, issuer: &Issuer<'_>, claims: Value) -> Result<Job, Error> {
    let mut job = kind.ci().job(issuer, &claims)?;
    if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
        job.token_id = format!("jti:{jti}");
    }
    if let Some(exp) = claims.get("exp").and_then(Value::as_i64) {
        job.expires_at = exp;
    }
    job.claims = claims::as_object(claims)?;
    Ok(job)
}
