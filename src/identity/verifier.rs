//! Token in, `Job` out: issuer pinning before any network call, algorithm and key checks,
//! signature and time validation, then the issuer kind's claim mapping.

use std::collections::HashMap;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::claims::Registered;
use super::keys::FixedKeys;
use super::{Error, IssuerConfig, KeyStore, job_from_issuer_claims};
use crate::ci::Job;
use crate::net::HttpClient;

/// Larger than any CI's token; anything bigger is refused before it is parsed.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Clock skew tolerated on `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 60;

pub struct Verifier {
    /// By `iss`.
    issuers: HashMap<String, Pinned>,
    keys: Keys,
}

enum Keys {
    Fetched(KeyStore),
    Fixed(FixedKeys),
}

/// A pinned issuer and what validating its tokens takes, for each algorithm it may use: built
/// once, not per token.
struct Pinned {
    config: IssuerConfig,
    validations: Vec<(Algorithm, Validation)>,
}

impl Pinned {
    fn new(config: IssuerConfig, broker_audience: &str) -> Self {
        let audience = config.audience.as_deref().or(config.kind.ci().fixed_audience).unwrap_or(broker_audience);
        let validations = config.algorithms.iter().map(|&alg| (alg, validation(&config, audience, alg))).collect();
        Self { config, validations }
    }

    /// None for an algorithm this issuer may not use.
    fn validation(&self, alg: Algorithm) -> Option<&Validation> {
        self.validations.iter().find(|(allowed, _)| *allowed == alg).map(|(_, validation)| validation)
    }
}

#[derive(Deserialize)]
struct UnverifiedIssuer {
    iss: String,
}

impl Verifier {
    pub fn new(audience: String, issuers: Vec<IssuerConfig>, http: HttpClient) -> Self {
        let keys = Keys::Fetched(KeyStore::new(http, &issuers));
        Self::pinning(audience, issuers, keys)
    }

    /// A verifier of the same checks whose issuers' keys are given, never fetched.
    pub fn with_fixed_keys(audience: String, issuers: Vec<IssuerConfig>, keys: FixedKeys) -> Self {
        Self::pinning(audience, issuers, Keys::Fixed(keys))
    }

    fn pinning(audience: String, issuers: Vec<IssuerConfig>, keys: Keys) -> Self {
        let issuers =
            issuers.into_iter().map(|issuer| (issuer.issuer.clone(), Pinned::new(issuer, &audience))).collect();
        Self { issuers, keys }
    }

    /// See [`KeyStore::set_refresh_cooldown`]; fixed keys are never refreshed.
    pub fn with_refresh_cooldown(mut self, cooldown: std::time::Duration) -> Self {
        if let Keys::Fetched(store) = &mut self.keys {
            store.set_refresh_cooldown(cooldown);
        }
        self
    }

    pub async fn verify(&self, token: &str) -> Result<Job, Error> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Error::Malformed(format!("longer than {MAX_TOKEN_BYTES} bytes")));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| Error::Malformed(e.to_string()))?;
        // Only the issuer is read before verification, to pick the pinned issuer's keys; an
        // unknown issuer is refused here, before any network call.
        let unverified: UnverifiedIssuer = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|_| Error::Malformed("the claims do not name an issuer".into()))?;
        let pinned = self.issuers.get(&unverified.iss).ok_or(Error::UnknownIssuer)?;
        let validation =
            pinned.validation(header.alg).ok_or_else(|| Error::AlgorithmNotAllowed(format!("{:?}", header.alg)))?;
        let issuer = &pinned.config;
        let kid = header.kid.as_deref().ok_or_else(|| Error::Malformed("the header has no kid".into()))?;
        let key = match &self.keys {
            Keys::Fetched(store) => store.key(issuer, kid).await?,
            Keys::Fixed(fixed) => fixed.key(issuer, kid)?,
        };
        key.check_fits(header.alg)?;
        let verified = match jsonwebtoken::decode::<Value>(token, &key.key, validation) {
            Err(error) if *error.kind() == ErrorKind::InvalidSignature => {
                let Keys::Fetched(store) = &self.keys else { return Err(invalid(error)) };
                let Some(fresh) = store.refreshed_key(issuer, kid, &key).await else { return Err(invalid(error)) };
                fresh.check_fits(header.alg)?;
                jsonwebtoken::decode::<Value>(token, &fresh.key, validation).map_err(invalid)?
            }
            decoded => decoded.map_err(invalid)?,
        };
        let claims = verified.claims;
        let registered = Registered::of(&claims)?;
        check_issued_at(registered.iat)?;
        check_lifetime(issuer, registered.iat, registered.exp)?;
        let mut job = job_from_issuer_claims(issuer, claims)?;
        if let Some(jti) = registered.jti.filter(|jti| !jti.is_empty()) {
            job.token_id = format!("jti:{jti}");
        } else {
            job.token_id = signed_part_id(token);
            job.legacy_token_id = Some(format!("sha256:{}", token_sha256(token)));
        }
        job.expires_at = registered.exp;
        Ok(job)
    }
}

fn validation(issuer: &IssuerConfig, audience: &str, alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
    validation.set_issuer(&[&issuer.issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.validate_nbf = true;
    validation.leeway = LEEWAY_SECONDS;
    validation
}

/// The hex SHA-256 of a token's text: how audit events name a token.
pub fn token_sha256(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The replay id of a verified token without `jti`: the SHA-256 of what its signature covers,
/// `header.payload`, cut where `jsonwebtoken` cuts it (at the last '.'). The signature itself is
/// left out: an ECDSA signature (r, s) verifies as (r, n − s) too, so hashing the whole text would
/// let an ES256/ES384 token be spent twice. The prefix differs from the whole-text ids that
/// earlier releases recorded (`sha256:`), which the verifier hands on as `legacy_token_id`.
pub fn signed_part_id(token: &str) -> String {
    let signed = token.rsplit_once('.').map_or(token, |(signed, _)| signed);
    format!("signed-sha256:{}", hex::encode(Sha256::digest(signed.as_bytes())))
}

fn check_issued_at(iat: Option<i64>) -> Result<(), Error> {
    let now = jsonwebtoken::get_current_timestamp();
    match iat {
        Some(iat) if iat > (now + LEEWAY_SECONDS) as i64 => Err(Error::Invalid("issued in the future".into())),
        _ => Ok(()),
    }
}

/// A token minted to live longer than its issuer's `max_token_lifetime` stays a bearer credential
/// for longer than its job needs; one whose lifetime cannot be told is refused too.
fn check_lifetime(issuer: &IssuerConfig, iat: Option<i64>, exp: i64) -> Result<(), Error> {
    let Some(max) = issuer.max_token_lifetime else { return Ok(()) };
    let Some(iat) = iat else {
        return Err(Error::Invalid("no `iat`, so its lifetime cannot be checked against max_token_lifetime".into()));
    };
    let lifetime = exp.saturating_sub(iat);
    if lifetime > i64::try_from(max.as_secs()).unwrap_or(i64::MAX) {
        return Err(Error::Invalid(format!(
            "it lives {lifetime} s (exp - iat), longer than the issuer's max_token_lifetime of {} s",
            max.as_secs()
        )));
    }
    Ok(())
}

fn invalid(error: jsonwebtoken::errors::Error) -> Error {
    let reason = match error.kind() {
        ErrorKind::ExpiredSignature => "expired".to_owned(),
        ErrorKind::ImmatureSignature => "not yet valid (nbf)".to_owned(),
        ErrorKind::InvalidAudience => "the audience does not include this broker".to_owned(),
        ErrorKind::InvalidIssuer => "wrong issuer".to_owned(),
        ErrorKind::InvalidSignature => "bad signature".to_owned(),
        ErrorKind::InvalidAlgorithm => "algorithm not allowed".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => {
            return Error::Invalid(format!("missing required claim `{claim}`"));
        }
        ErrorKind::InvalidClaimFormat(claim) => format!("claim `{claim}` has the wrong type"),
        ErrorKind::Json(_) | ErrorKind::Base64(_) | ErrorKind::Utf8(_) | ErrorKind::InvalidToken => {
            return Error::Malformed("the token does not decode".into());
        }
        _ => "verification failed".to_owned(),
    };
    Error::Invalid(reason)
}

#[cfg(test)]
#[path = "verifier_tests.rs"]
mod tests;
