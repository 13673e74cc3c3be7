//! What an STS session minted for a role is: the target role, optionally narrowed by a session
//! policy and tagged, checked against STS's rules when the policy loads.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde::de::Deserializer;

use super::checked_section::from_map;

/// What an STS session minted for a role is: the target role, optionally narrowed.
#[derive(Clone, Debug)]
pub struct AwsScope {
    pub role_arn: String,
    /// The session policy as compact JSON, ready for `sts:AssumeRole`'s `Policy`.
    pub session_policy: Option<String>,
    /// Extra session tags; never one of the `ci_*` tags the broker sets itself.
    pub session_tags: BTreeMap<String, String>,
}

/// STS refuses sessions shorter than this.
pub const AWS_MIN_SESSION: Duration = Duration::from_secs(900);
/// STS's ceiling for `sts:AssumeRole`, whatever the role's own maximum.
pub const AWS_MAX_SESSION: Duration = Duration::from_secs(12 * 3600);
/// Tags the broker sets on every session, so a role's own tags cannot spoof them.
pub const AWS_RESERVED_TAG_PREFIX: &str = "ci_";
/// STS allows 50 session tags; the broker sets four.
const AWS_MAX_EXTRA_TAGS: usize = 46;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AwsFields {
    role_arn: String,
    #[serde(default)]
    session_policy: Option<serde_json::Value>,
    #[serde(default)]
    session_tags: BTreeMap<String, String>,
}

pub(super) struct AwsDoc(pub(super) AwsScope);

impl<'de> Deserialize<'de> for AwsDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "an `aws:` mapping with `role_arn`", |doc: AwsFields| {
            check_role_arn(&doc.role_arn)?;
            let session_policy = match doc.session_policy {
                None => None,
                Some(policy @ serde_json::Value::Object(_)) => Some(policy.to_string()),
                Some(_) => {
                    return Err("`aws.session_policy` must be a policy document mapping such as `{ Version: \"2012-10-17\", Statement: [...] }`".to_owned());
                }
            };
            if doc.session_tags.len() > AWS_MAX_EXTRA_TAGS {
                return Err(format!(
                    "`aws.session_tags` has more than {AWS_MAX_EXTRA_TAGS} tags (STS allows 50, the broker sets 4)"
                ));
            }
            for (key, value) in &doc.session_tags {
                check_tag(key, value)?;
            }
            Ok(AwsDoc(AwsScope { role_arn: doc.role_arn, session_policy, session_tags: doc.session_tags }))
        })
    }
}

/// `arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME`: anything else would fail at every mint.
fn check_role_arn(arn: &str) -> Result<(), String> {
    let hint = "hint: write it like arn:aws:iam::123456789012:role/deploy-prod";
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let valid = matches!(parts.as_slice(), ["arn", partition, "iam", "", account, resource]
        if !partition.is_empty()
            && account.len() == 12
            && account.bytes().all(|b| b.is_ascii_digit())
            && resource.strip_prefix("role/").is_some_and(|name| name.rsplit('/').next().is_some_and(|n| !n.is_empty())));
    if valid { Ok(()) } else { Err(format!("`aws.role_arn` `{arn}` is not an IAM role ARN; {hint}")) }
}

/// STS's rules for session tags, checked at load rather than at every mint.
fn check_tag(key: &str, value: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_alphanumeric() || c == ' ' || "_.:/=+-@".contains(c);
    if key.is_empty() || key.chars().count() > 128 || !key.chars().all(allowed) {
        return Err(format!("session tag key `{key}` is not 1 to 128 letters, digits, spaces or _.:/=+-@"));
    }
    let lower = key.to_ascii_lowercase();
    if lower.starts_with(AWS_RESERVED_TAG_PREFIX) || lower.starts_with("aws:") {
        return Err(format!(
            "session tag key `{key}` is reserved: the broker sets the ci_* tags from the job, and aws:* belongs to AWS"
        ));
    }
    if value.chars().count() > 256 || !value.chars().all(allowed) {
        return Err(format!("session tag `{key}`: the value is not up to 256 letters, digits, spaces or _.:/=+-@"));
    }
    Ok(())
}
