//! What every CI's claim mapping shares: strict decoding, required claims, ref forms.

use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;

/// Why a verified token's claims do not describe a job.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ClaimsError {
    #[error("the token lacks the required claim `{0}`")]
    Missing(&'static str),
    #[error("the token's claims do not have the documented types: {0}")]
    WrongType(String),
    /// The claims are well-formed but describe no job this issuer may speak for.
    #[error("the token's claims are refused: {0}")]
    Refused(String),
    /// A claim template named a variable the build does not set: the CI signed its literal text.
    #[error(
        "the claim `{0}` still holds `${{`: the controller's claim template names a variable this build does not set"
    )]
    Unsubstituted(String),
}

/// Decodes the CI-specific claims strictly: a claim of another JSON type than documented is
/// refused, never coerced.
pub fn decode<T: DeserializeOwned>(claims: &Value) -> Result<T, ClaimsError> {
    T::deserialize(claims).map_err(|e| ClaimsError::WrongType(e.to_string()))
}

pub fn required(value: Option<String>, claim: &'static str) -> Result<String, ClaimsError> {
    match value {
        Some(value) if !value.is_empty() => Ok(value),
        _ => Err(ClaimsError::Missing(claim)),
    }
}

/// Maps a branch or tag name onto the full ref form policy compares.
pub fn full_ref(ref_type: Option<&str>, name: &str) -> Option<String> {
    if name.starts_with("refs/") {
        return Some(name.to_owned());
    }
    match ref_type {
        Some("branch") => Some(format!("refs/heads/{name}")),
        Some("tag") => Some(format!("refs/tags/{name}")),
        _ => None,
    }
}

/// Booleans written as the strings "true" and "false"; anything else is refused.
pub fn string_bool(value: Option<&str>, claim: &'static str) -> Result<Option<bool>, ClaimsError> {
    match value {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(ClaimsError::WrongType(format!("`{claim}` must be \"true\" or \"false\""))),
    }
}
