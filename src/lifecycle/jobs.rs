//! Ending a job: by the CI system's completion webhook or by the job itself. The end is
//! durable before it is acknowledged; revocation follows through the queue.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use super::{Error, JobEnds};
use crate::audit::{Event, JobRef};
use crate::ci::NamedJob;
use crate::clock::now;
use crate::identity::token_sha256;
use crate::store::EndOutcome;

/// Who ended a job, as recorded and logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndedBy<'a> {
    /// The `[webhooks.<name>]` endpoint, by its name.
    Webhook(&'a str),
    TheJobItself,
    /// The CI's API, asked by the reconciler, said the job had finished.
    Reconcile,
    /// The CI's API, asked at an exchange, said the job had finished.
    ExchangeCheck,
}

impl EndedBy<'_> {
    /// The `source` label of audit events and `ci_creds_jobs_ended_total`.
    pub fn source(self) -> &'static str {
        match self {
            Self::Webhook(_) => "webhook",
            Self::TheJobItself => "self",
            Self::Reconcile => "reconcile",
            Self::ExchangeCheck => "exchange_check",
        }
    }
}

impl fmt::Display for EndedBy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Webhook(name) => write!(f, "webhook:{name}"),
            Self::TheJobItself => f.write_str("self"),
            Self::Reconcile => f.write_str("ci_api:reconcile"),
            Self::ExchangeCheck => f.write_str("ci_api:exchange"),
        }
    }
}

/// What ending a job did: how many of its credentials are now being revoked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobEnd {
    pub job_id: String,
    pub revoked: u64,
}

/// Until when a job's records are kept: `retention` past `latest` (unix seconds). Saturating, as
/// a signed `exp` near the end of the i64 range (or a retention past it) would otherwise wrap to
/// a time long past, and the job's end would be forgotten at the next sweep.
pub(super) fn keep_until(latest: i64, retention: Duration) -> i64 {
    latest.saturating_add(i64::try_from(retention.as_secs()).unwrap_or(i64::MAX))
}

impl JobEnds {
    /// Ends `job_id` of `issuer`. With a webhook `delivery` (source, id) that was applied before,
    /// nothing changes and `None` is returned. `token_sha256` is the job's own token, when it
    /// ended itself.
    pub(super) async fn end_job(
        &self,
        issuer: &str,
        job_id: &str,
        ended_by: EndedBy<'_>,
        delivery: Option<(&str, &str)>,
        token: Option<(&str, i64)>,
    ) -> Result<Option<JobEnd>, Error> {
        let token_expires_at = token.map(|(_, expires_at)| expires_at);
        let keep_until = keep_until(now().max(token_expires_at.unwrap_or(0)), self.lifecycle.retention);
        let by = ended_by.to_string();
        match self.store.end_job(issuer, job_id, &by, delivery, keep_until).await? {
            EndOutcome::Duplicate => {
                tracing::info!(%issuer, %job_id, ended_by = %by, "duplicate webhook delivery ignored");
                Ok(None)
            }
            EndOutcome::AlreadyEnded { revoking } => {
                tracing::info!(%issuer, %job_id, ended_by = %by, revoking, "job had already ended");
                if revoking > 0 {
                    self.revocations.wake();
                }
                Ok(Some(JobEnd { job_id: job_id.to_owned(), revoked: revoking }))
            }
            EndOutcome::Ended { revoking } => {
                tracing::info!(%issuer, %job_id, ended_by = %by, revoking, "job ended");
                crate::metrics::job_ended(ended_by.source());
                self.running.invalidate(&(issuer.to_owned(), job_id.to_owned())).await;
                self.audit.record(&Event::JobEnded {
                    job: JobRef { issuer, job_id },
                    ended_by: &by,
                    source: ended_by.source(),
                    delivery_id: delivery.map(|(_, id)| id),
                    token_sha256: token.map(|(sha256, _)| sha256),
                    revoking,
                });
                if revoking > 0 {
                    self.revocations.wake();
                }
                Ok(Some(JobEnd { job_id: job_id.to_owned(), revoked: revoking }))
            }
        }
    }

    /// Ends every job recorded within `job_id` (`{job_id}/…`: an Azure Pipelines run's jobs), each
    /// by the same durable path, when `job_id` has ended: how many credentials that revokes.
    pub(super) async fn end_jobs_within(
        &self,
        issuer: &str,
        job_id: &str,
        ended_by: EndedBy<'_>,
    ) -> Result<u64, Error> {
        let mut revoked = 0;
        for within in self.store.job_ids_within(issuer, job_id).await? {
            if let Some(end) = self.end_job(issuer, &within, ended_by, None, None).await? {
                revoked += end.revoked;
            }
        }
        Ok(revoked)
    }

    /// The job presents one of its own valid tokens (an exchanged one is fine) to end itself;
    /// `named` is the job within the run it is, for a CI whose token names only the run (as its
    /// exchange named it), so that its end is not its whole run's.
    pub async fn end_own_job(&self, token: &str, named: Option<NamedJob>) -> Result<JobEnd, Error> {
        let mut job = self.verifier.verify(token).await?;
        super::request::bind_named_job(&mut job, named)?;
        let sha256 = token_sha256(token);
        let ended = self
            .end_job(&job.issuer, &job.job_id, EndedBy::TheJobItself, None, Some((&sha256, job.expires_at)))
            .await?;
        Ok(ended.unwrap_or(JobEnd { job_id: job.job_id, revoked: 0 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_expiring_at_the_end_of_time_keeps_its_job_ended_rather_than_wrapping_into_the_past() {
        let day = Duration::from_secs(86_400);
        assert_eq!(keep_until(1_700_000_000, day), 1_700_086_400);
        assert_eq!(keep_until(i64::MAX, day), i64::MAX);
        assert_eq!(keep_until(1_700_000_000, Duration::MAX), i64::MAX);
    }
}
