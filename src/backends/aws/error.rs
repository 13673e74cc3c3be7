//! AWS SDK errors as `backends::Error`: AWS's own refusals keep their error code; anything that
//! means "try again later" is `Unavailable`.

use aws_sdk_sts::config::http::HttpResponse;
use aws_sdk_sts::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use super::NAME;
use crate::backends::Error;

/// Error codes AWS uses for "slow down" or a fault on its side rather than a refusal.
const TRANSIENT_CODES: [&str; 6] = [
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ServiceUnavailable",
    "InternalFailure",
    "IDPCommunicationError",
];

/// AWS's messages name ARNs and actions, never credentials, so they may go to the log.
pub fn classify<E>(error: SdkError<E, HttpResponse>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &error {
        SdkError::ServiceError(context) => {
            let err = context.err();
            let body = context.raw().body().bytes().map(String::from_utf8_lossy).unwrap_or_default();
            let code = err.code().or_else(|| element(&body, "Code")).unwrap_or("Unknown").to_owned();
            let reason = err.message().or_else(|| element(&body, "Message")).unwrap_or_default().to_owned();
            if TRANSIENT_CODES.contains(&code.as_str()) {
                Error::Unavailable { backend: NAME, reason: format!("{code}: {reason}") }
            } else {
                Error::Refused { backend: NAME, code, reason }
            }
        }
        _ => Error::Unavailable { backend: NAME, reason: DisplayErrorContext(&error).to_string() },
    }
}

/// Some STS/IAM-compatible servers (moto among them) nest an error one level deeper than AWS
/// (`ErrorResponse/Errors/Error`), where the SDK's parser does not look; their `Code` is still
/// the server's own answer, worth more to an operator than "Unknown".
fn element<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let start = body.find(&format!("<{name}>"))? + name.len() + 2;
    let end = start + body[start..].find(&format!("</{name}>"))?;
    Some(&body[start..end]).filter(|text| !text.is_empty() && !text.contains('<'))
}
