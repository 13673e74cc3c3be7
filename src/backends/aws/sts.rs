//! Minting: one `sts:AssumeRole` per job and role, named after the job.

use aws_sdk_sts::types::Tag;
use secrecy::SecretString;

use super::naming::{job_tags, source_identity};
use super::{AwsBackend, NAME, error::classify};
use crate::backends::{Credential, Error, MintRequest, Minted, RevokeHandle};
use crate::policy::{AWS_MAX_SESSION, AWS_MIN_SESSION, AwsScope, bound_session_policy};

impl AwsBackend {
    pub(super) async fn assume_role(&self, request: MintRequest<'_, AwsScope>) -> Result<Minted, Error> {
        let scope = request.scope;
        let identity = source_identity(&request.job.issuer, &request.job.job_id);
        let duration = request.ttl.clamp(AWS_MIN_SESSION, AWS_MAX_SESSION).as_secs();
        let tags = job_tags(request.job)
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .chain(scope.session_tags.iter().map(|(k, v)| (k.clone(), v.clone())))
            .map(|(key, value)| Tag::builder().key(key).value(value).build())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Refused { backend: NAME, code: "InvalidTag".into(), reason: e.to_string() })?;
        let policy =
            match request.bind {
                None => scope.session_policy.clone(),
                // Checked when the policy loaded: it binds, and fits STS's size limit.
                Some(block) => {
                    Some(bound_session_policy(scope.session_policy.as_deref(), block).map_err(|reason| {
                        Error::Refused { backend: NAME, code: "SessionPolicyUnbindable".into(), reason }
                    })?)
                }
            };
        let answer = self
            .sts
            .assume_role()
            .role_arn(&scope.role_arn)
            .role_session_name(&identity)
            .source_identity(&identity)
            .set_tags(Some(tags))
            .set_policy(policy)
            .duration_seconds(i32::try_from(duration).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(classify)?;
        let Some(credentials) = answer.credentials else {
            return Err(Error::Unavailable { backend: NAME, reason: "AssumeRole answered without credentials".into() });
        };
        let expires_at = credentials.expiration.secs();
        Ok(Minted {
            credential: Credential::Aws {
                access_key_id: SecretString::from(credentials.access_key_id),
                secret_access_key: SecretString::from(credentials.secret_access_key),
                session_token: SecretString::from(credentials.session_token),
                region: self.region.clone(),
            },
            handle: RevokeHandle::Aws { role_arn: scope.role_arn.clone(), source_identity: identity, expires_at },
            expires_at: time::OffsetDateTime::from_unix_timestamp(expires_at).ok(),
            // A session cannot be made to live shorter until recorded: it is denied by job
            // instead, handle or not (`deny_list.rs`).
            confirmation: None,
        })
    }
}
