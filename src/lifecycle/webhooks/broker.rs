//! What the broker does with an authenticated delivery: end the job it names, once.

use std::sync::Arc;

use http::HeaderMap;

use crate::audit::Event;
use crate::ci::{CiKind, RunnerFacts, Verdict, WebhookError};
use crate::clock::now;
use crate::lifecycle::{EndedBy, Error, JobEnd, JobEnds};

/// What the broker did with a delivery.
#[derive(Debug, PartialEq, Eq)]
pub enum WebhookOutcome {
    Ended(JobEnd),
    /// A start event: the runner it names is recorded for the job.
    RunnerRecorded {
        job_id: String,
    },
    Ignored(String),
    Duplicate,
}

impl JobEnds {
    /// A delivery to the endpoint `name`: read as its issuer's CI writes them, and applied to that
    /// issuer's jobs only, whatever job it names.
    pub async fn webhook(&self, name: &str, headers: &HeaderMap, body: &[u8]) -> Result<WebhookOutcome, Error> {
        let endpoint = self.webhooks.endpoint(name).ok_or(Error::WebhookNotConfigured)?;
        let source = endpoint.kind;
        let verdict = source.ci().read_webhook(headers, body, &endpoint.secret).inspect_err(|error| {
            if *error == WebhookError::InvalidSignature {
                let event = Event::WebhookRefused { ci: source.name(), webhook: name, reason: "invalid_signature" };
                self.audit.record(&event);
            }
        })?;
        let (job_id, delivery_id, runner, jobs_within) = match verdict {
            Verdict::End { job_id, delivery_id, runner, jobs_within } => (job_id, delivery_id, runner, jobs_within),
            Verdict::Started { job_id, runner } => {
                self.record_runner(&endpoint.issuer, &job_id, &runner).await?;
                return Ok(WebhookOutcome::RunnerRecorded { job_id });
            }
            Verdict::Ignore(reason) => {
                self.audit.record(&Event::WebhookIgnored { ci: source.name(), webhook: name, reason: &reason });
                return Ok(WebhookOutcome::Ignored(reason));
            }
        };
        if let Some(runner) = &runner {
            self.record_runner(&endpoint.issuer, &job_id, runner).await?;
        }
        // Delivery ids are kept by endpoint: one applied at another endpoint (another issuer's,
        // which ended none of this one's jobs) does not make this one a redelivery.
        let delivery = delivery_id.as_deref().map(|id| (name, id));
        let ended_by = EndedBy::Webhook(name);
        let ended = self.end_job(&endpoint.issuer, &job_id, ended_by, delivery, None).await?;
        if !jobs_within {
            return Ok(ended.map_or(WebhookOutcome::Duplicate, WebhookOutcome::Ended));
        }
        // Even for a redelivery: a broker that stopped after the run's end and before its jobs'
        // ends them now. Each job's end is written before its credentials are revoked, as any.
        let revoked = ended.as_ref().map_or(0, |end| end.revoked)
            + self.end_jobs_within(&endpoint.issuer, &job_id, ended_by).await?;
        Ok(match ended {
            None if revoked == 0 => WebhookOutcome::Duplicate,
            _ => WebhookOutcome::Ended(JobEnd { job_id, revoked }),
        })
    }

    /// The CI and the configured name of the endpoint `name`, for the labels of its metrics;
    /// `None` when no endpoint is configured at that name.
    pub fn webhook_labels(&self, name: &str) -> Option<(CiKind, Arc<str>)> {
        self.webhooks.endpoint(name).map(|endpoint| (endpoint.kind, Arc::clone(&endpoint.name)))
    }

    async fn record_runner(&self, issuer: &str, job_id: &str, runner: &RunnerFacts) -> Result<(), Error> {
        let facts = serde_json::to_string(runner).unwrap_or_default();
        let keep_until = super::super::jobs::keep_until(now(), self.lifecycle.retention);
        self.store.record_webhook_runner(issuer, job_id, &facts, keep_until).await?;
        Ok(())
    }
}
