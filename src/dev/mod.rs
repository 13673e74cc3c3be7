//! A local OIDC issuer for development and tests: generated keys, a discovery document and a
//! JWKS served on loopback, and tokens shaped like a CI system's. Never part of `serve`.

#[cfg(feature = "server")]
mod issuer;
mod signing_key;

#[cfg(feature = "server")]
pub use issuer::DevIssuer;
pub use signing_key::SigningKey;

use serde_json::{Map, Value, json};

/// The claims of a CI fixture made live: `iss`, `aud`, times and a fresh `jti` replaced.
pub fn live_claims(fixture: &Value, issuer: &str, audience: &str, lifetime_seconds: i64) -> Value {
    let now = crate::clock::now();
    let mut claims = fixture.as_object().cloned().unwrap_or_else(Map::new);
    claims.insert("iss".into(), json!(issuer));
    claims.insert("aud".into(), json!(audience));
    claims.insert("iat".into(), json!(now));
    claims.insert("nbf".into(), json!(now));
    claims.insert("exp".into(), json!(now + lifetime_seconds));
    if claims.contains_key("jti") {
        claims.insert("jti".into(), json!(uuid::Uuid::new_v4().to_string()));
    }
    Value::Object(claims)
}
