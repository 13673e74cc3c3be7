//! AWS: an STS session per job and role (`sts:AssumeRole` with the job as source identity), and,
//! since STS sessions cannot be revoked, a per-role inline deny list of ended jobs' identities
//! that the sweeper prunes once their sessions have expired.

mod deny_list;
mod error;
mod iam;
mod naming;
mod sts;

pub use deny_list::{DenyList, POLICY_NAME, PRUNE_GRACE_SECONDS, ROLE_INLINE_BUDGET};
pub use naming::source_identity;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::timeout::TimeoutConfig;

pub use super::config::AwsConfig;
use super::{Backend, Error, MintRequest, Minted, RevokeHandle};
use crate::policy::AwsScope;

const NAME: &str = "aws";

pub struct AwsBackend {
    sts: aws_sdk_sts::Client,
    iam: aws_sdk_iam::Client,
    region: String,
    /// Per target role (by IAM role name): the lock that serialises its deny list's
    /// read-modify-write, and what this process last knew of it.
    roles: Mutex<HashMap<String, Arc<tokio::sync::Mutex<RoleState>>>>,
}

#[derive(Default)]
struct RoleState {
    /// The deny list as this process last wrote or read it.
    written: Option<DenyList>,
    /// Unix seconds before which pruning has nothing to do.
    next_check: i64,
}

impl AwsBackend {
    /// The broker's own identity comes from the standard AWS credential chain (environment,
    /// profile, web identity, container or instance metadata). `role_arns` are the target roles
    /// in policy, whose deny lists the sweeper prunes even if this process wrote none of them.
    pub async fn new<'a>(config: &AwsConfig, role_arns: impl IntoIterator<Item = &'a str>) -> Result<Self, Error> {
        let timeout = TimeoutConfig::builder().operation_timeout(Duration::from_secs(config.timeout_seconds)).build();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(aws_config::Region::new(config.region.clone()))
            .timeout_config(timeout);
        if let Some(endpoint) = &config.endpoint_url {
            loader = loader.endpoint_url(endpoint);
        }
        let shared = loader.load().await;
        Self::with_shared_config(&shared, &config.region, role_arns)
    }

    /// A backend acting with the identity, endpoint and timeouts of `shared`, an AWS SDK
    /// configuration made by the caller (what [`AwsBackend::new`] loads from the standard chain).
    pub fn with_shared_config<'a>(
        shared: &aws_config::SdkConfig,
        region: &str,
        role_arns: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, Error> {
        let backend = Self {
            sts: aws_sdk_sts::Client::new(shared),
            iam: aws_sdk_iam::Client::new(shared),
            region: region.to_owned(),
            roles: Mutex::default(),
        };
        for arn in role_arns {
            backend.role_state(iam::role_name(arn)?);
        }
        Ok(backend)
    }

    fn role_state(&self, role: &str) -> Arc<tokio::sync::Mutex<RoleState>> {
        let mut roles = self.roles.lock().unwrap_or_else(|p| p.into_inner());
        roles.entry(role.to_owned()).or_default().clone()
    }

    /// The ARN of the broker's own identity, from `sts:GetCallerIdentity`.
    pub async fn caller_identity(&self) -> Result<String, Error> {
        let answer = self.sts.get_caller_identity().send().await.map_err(error::classify)?;
        Ok(answer.arn.unwrap_or_default())
    }

    /// Drops ended jobs' identities whose sessions have expired from every role's deny list.
    pub async fn prune(&self) {
        self.prune_all().await;
    }
}

impl Backend for AwsBackend {
    type Scope = AwsScope;

    async fn mint(&self, request: MintRequest<'_, AwsScope>) -> Result<Minted, Error> {
        self.assume_role(request).await
    }

    async fn revoke(&self, handle: &RevokeHandle) -> Result<(), Error> {
        let RevokeHandle::Aws { role_arn, source_identity, expires_at } = handle else {
            return Err(Error::WrongHandle(NAME));
        };
        self.deny(role_arn, source_identity, *expires_at).await
    }

    async fn check(&self) -> Result<(), Error> {
        self.sts.get_caller_identity().send().await.map_err(error::classify)?;
        Ok(())
    }
}
