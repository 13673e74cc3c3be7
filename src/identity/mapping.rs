//! Claims to `Job` for a CI kind, without verification: what the verifier does after checking the
//! signature, and what `ci-creds policy explain`/`test` do with a claim set from a file.

use serde_json::Value;

use super::{Error, claims};
use crate::job::{CiKind, Job};

/// Maps already-trusted claims onto a job of issuer `issuer` (the configured name policy uses).
/// `token_id` and `expires_at` come from `jti` and `exp` when present; the verifier sets its own.
/// The claims are kept in the job (for `claims:` conditions), so they are taken, not copied.
pub fn job_from_claims(kind: CiKind, issuer: &str, claims: Value) -> Result<Job, Error> {
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
