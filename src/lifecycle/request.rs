//! What an exchange asks for, and the bounds checked before its token is even verified.

use std::net::IpAddr;
use std::time::Duration;

use super::Error;
use crate::ci::NamedJob;
#[cfg(feature = "server")]
use crate::ci::{CiKind, Job};

/// More roles than any job needs in one exchange; bounds the work one request can cause.
pub const MAX_ROLES_PER_EXCHANGE: usize = 16;
/// Counted in characters, as JSON Schema's `maxLength` counts, so the API document states it exactly.
pub const MAX_ROLE_NAME_CHARS: usize = 128;

pub struct ExchangeRequest {
    pub roles: Vec<String>,
    /// Clamped to each role's `max_ttl`; the role's `max_ttl` when absent.
    pub ttl: Option<Duration>,
    /// The job within its run that the credentials are for, for a CI whose token names only the
    /// run (Azure Pipelines); refused for any other CI.
    pub job: Option<NamedJob>,
    /// The address the exchange came from, as the API determined it: the TCP peer, or the
    /// address a trusted proxy forwarded. `None` where no network peer exists (in-process calls).
    pub address: Option<IpAddr>,
}

pub fn check_request(request: &ExchangeRequest) -> Result<(), Error> {
    if request.roles.is_empty() {
        return Err(Error::InvalidRequest("`roles` must name at least one role".into()));
    }
    if request.roles.len() > MAX_ROLES_PER_EXCHANGE {
        return Err(Error::InvalidRequest(format!("at most {MAX_ROLES_PER_EXCHANGE} roles per request")));
    }
    if request.roles.iter().any(|role| role.is_empty() || role.chars().count() > MAX_ROLE_NAME_CHARS) {
        return Err(Error::InvalidRequest(format!("a role name must be 1 to {MAX_ROLE_NAME_CHARS} characters")));
    }
    if request.ttl.is_some_and(|ttl| ttl.is_zero()) {
        return Err(Error::InvalidRequest("`ttl_seconds` must be positive".into()));
    }
    Ok(())
}

/// Binds a verified job to the job within its run that the request names, for a CI whose token
/// names only the run; a request naming a job for any other CI is refused.
#[cfg(feature = "server")]
pub(super) fn bind_named_job(job: &mut Job, named: Option<NamedJob>) -> Result<(), Error> {
    let Some(named) = named else { return Ok(()) };
    match job.kind.and_then(|kind| kind.ci().job_in_run.as_ref()) {
        Some(job_in_run) => {
            (job_in_run.bind)(job, named);
            Ok(())
        }
        None => {
            let runs: Vec<&str> = CiKind::ALL
                .into_iter()
                .filter(|kind| kind.ci().job_in_run.is_some())
                .map(|kind| kind.ci().title)
                .collect();
            Err(Error::InvalidRequest(format!(
                "`job` names a job within an {} run; this token's CI names its job itself",
                runs.join(" or ")
            )))
        }
    }
}
