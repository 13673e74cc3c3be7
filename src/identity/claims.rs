//! The claims every token has, whatever its CI: strict decoding of the registered ones.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::Error;

/// The registered claims every mapping reads, beyond what signature validation checked.
#[derive(Deserialize)]
pub struct Registered {
    #[serde(default)]
    pub jti: Option<String>,
    pub exp: i64,
    #[serde(default)]
    pub iat: Option<i64>,
}

impl Registered {
    /// Strictly: a registered claim of another JSON type is refused, never coerced.
    pub fn of(claims: &Value) -> Result<Self, Error> {
        Self::deserialize(claims).map_err(|e| Error::WrongClaimType(e.to_string()))
    }
}

pub fn as_object(claims: Value) -> Result<Map<String, Value>, Error> {
    match claims {
        Value::Object(map) => Ok(map),
        _ => Err(Error::Malformed("the claims are not a JSON object".into())),
    }
}
