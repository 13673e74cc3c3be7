//! The broker's answer to `POST /v1/credentials`, secrets kept redacted. Unknown fields are
//! ignored so a newer broker's additions do not break an older client.

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use super::Error;

pub(super) struct Answer {
    /// The body as received, for `--format json`.
    pub(super) raw: SecretString,
    pub(super) credentials: Vec<Credential>,
}

#[derive(Deserialize)]
struct Body {
    credentials: Vec<Credential>,
}

#[derive(Deserialize)]
pub(super) struct Credential {
    pub(super) role: String,
    pub(super) backend: String,
    pub(super) expires_at: String,
    #[serde(default)]
    pub(super) vault: Option<VaultCredential>,
    #[serde(default)]
    pub(super) aws: Option<AwsCredential>,
    #[serde(default)]
    pub(super) github: Option<GithubCredential>,
}

/// A GitHub App installation token; opaque, whatever its length or format.
#[derive(Deserialize)]
pub(super) struct GithubCredential {
    pub(super) token: SecretString,
}

#[derive(Deserialize)]
pub(super) struct VaultCredential {
    pub(super) address: String,
    pub(super) token: SecretString,
}

/// An STS session, as the AWS backend hands it out.
#[derive(Deserialize)]
pub(super) struct AwsCredential {
    pub(super) access_key_id: SecretString,
    pub(super) secret_access_key: SecretString,
    pub(super) session_token: SecretString,
    #[serde(default)]
    pub(super) region: Option<String>,
}

impl Answer {
    pub(super) fn parse(raw: SecretString) -> Result<Self, Error> {
        // serde's messages can quote the input, so they are not shown.
        let body: Body = serde_json::from_str(raw.expose_secret()).map_err(|_| {
            Error::Unavailable("the broker's answer is not the documented {\"job\", \"credentials\"} JSON".into())
        })?;
        Ok(Self { raw, credentials: body.credentials })
    }
}
