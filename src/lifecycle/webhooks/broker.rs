//! What the broker does with an authenticated delivery: end the job it names, once.

use http::HeaderMap;

use super::{Verdict, WebhookSource, read};
use crate::lifecycle::{Broker, EndedBy, Error, JobEnd};

/// What the broker did with a delivery.
#[derive(Debug, PartialEq, Eq)]
pub enum WebhookOutcome {
    Ended(JobEnd),
    Ignored(String),
    Duplicate,
}

impl Broker {
    pub async fn webhook(
        &self,
        source: WebhookSource,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<WebhookOutcome, Error> {
        let endpoint = self.webhooks.endpoint(source).ok_or(Error::WebhookNotConfigured(source.name()))?;
        let (job_id, delivery_id) = match read(source, headers, body, &endpoint.secret)? {
            Verdict::End { job_id, delivery_id } => (job_id, delivery_id),
            Verdict::Ignore(reason) => return Ok(WebhookOutcome::Ignored(reason)),
        };
        let delivery = delivery_id.as_deref().map(|id| (source.name(), id));
        let ended = self.end_job(&endpoint.issuer, &job_id, EndedBy::Webhook(source.name()), delivery, None).await?;
        Ok(ended.map_or(WebhookOutcome::Duplicate, WebhookOutcome::Ended))
    }
}
