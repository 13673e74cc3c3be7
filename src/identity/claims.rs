//! What every CI's mapping shares: strict decoding and the common token claims.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Error;

/// Decodes the CI-specific claims strictly: a claim of another JSON type than documented is
/// refused, never coerced.
pub fn decode<T: DeserializeOwned>(claims: &Value) -> Result<T, Error> {
    T::deserialize(claims).map_err(|e| Error::WrongClaimType(e.to_string()))
}

pub fn required(value: Option<String>, claim: &'static str) -> Result<String, Error> {
    match value {
        Some(value) if !value.is_empty() => Ok(value),
        _ => Err(Error::MissingClaim(claim)),
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

/// GitLab writes booleans as the strings "true" and "false"; anything else is refused.
pub fn string_bool(value: Option<&str>, claim: &'static str) -> Result<Option<bool>, Error> {
    match value {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(Error::WrongClaimType(format!("`{claim}` must be \"true\" or \"false\""))),
    }
}

/// The registered claims every mapping reads, beyond what signature validation checked.
#[derive(Deserialize)]
pub struct Registered {
    #[serde(default)]
    pub jti: Option<String>,
    pub exp: i64,
    #[serde(default)]
    pub iat: Option<i64>,
}

pub fn as_object(claims: Value) -> Result<Map<String, Value>, Error> {
    match claims {
        Value::Object(map) => Ok(map),
        _ => Err(Error::Malformed("the claims are not a JSON object".into())),
    }
}
