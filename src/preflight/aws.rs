//! `[aws]`: the broker's own identity, from the standard credential chain, reaches STS
//! (`GetCallerIdentity`, which needs no IAM permission: AWS STS API reference).

use super::Finding;
use crate::backends::AwsConfig;
use crate::backends::aws::AwsBackend;

pub async fn check(config: &AwsConfig) -> Vec<Finding> {
    let item = "aws";
    let fix = "check the broker's AWS credentials (environment, profile, web identity or instance role), `aws.region` and `aws.endpoint_url`";
    let backend = match AwsBackend::new(config, Vec::<&str>::new()).await {
        Ok(backend) => backend,
        Err(error) => return vec![Finding::failed(item, error.to_string(), fix)],
    };
    match backend.caller_identity().await {
        Ok(arn) => vec![Finding::ok(item, format!("STS answers; the broker is {arn}"))],
        Err(error) => vec![Finding::failed(item, format!("sts:GetCallerIdentity failed: {error}"), fix)],
    }
}
