//! Per-issuer signing keys: fetched from the issuer's JWKS, cached, refreshed when a token names
//! a key id the cache does not hold, at most once per cooldown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use moka::future::Cache;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::{Error, IssuerConfig};
use crate::net::{self, HttpClient};

/// A key id the cached set lacks triggers a refetch only if the last fetch is older than this.
pub const REFRESH_COOLDOWN: Duration = Duration::from_secs(30);
/// Keys are refetched after this long even when every `kid` is found, to follow revocations.
const MAX_KEY_AGE: Duration = Duration::from_secs(3600);
const MAX_DOCUMENT_BYTES: usize = 512 * 1024;

/// A public key that may verify tokens, with the family its algorithm must belong to.
pub struct VerifyingKey {
    pub key: DecodingKey,
    kty: KeyType,
    /// The `alg` the JWK pins, parsed once when the keys are fetched.
    pin: AlgPin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AlgPin {
    Unpinned,
    Only(Algorithm),
    /// The JWK names an algorithm no JWS signature uses (e.g. an encryption one).
    NotASignatureAlgorithm,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyType {
    Rsa,
    Ec(EcCurve),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EcCurve {
    P256,
    P384,
}

impl VerifyingKey {
    /// Refuses an `alg` of another family than the key (an RSA key never verifies ES256, and so
    /// on), or one the JWK itself rules out.
    pub fn check_fits(&self, alg: Algorithm) -> Result<(), Error> {
        let fits_family = matches!(
            (self.kty, alg),
            (
                KeyType::Rsa,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ) | (KeyType::Ec(EcCurve::P256), Algorithm::ES256)
                | (KeyType::Ec(EcCurve::P384), Algorithm::ES384)
        );
        let fits_pin = match self.pin {
            AlgPin::Unpinned => true,
            AlgPin::Only(pinned) => pinned == alg,
            AlgPin::NotASignatureAlgorithm => false,
        };
        if fits_family && fits_pin {
            Ok(())
        } else {
            let kty = match self.kty {
                KeyType::Rsa => "RSA",
                KeyType::Ec(_) => "EC",
            };
            Err(Error::AlgorithmKeyMismatch { alg: format!("{alg:?}"), kty })
        }
    }
}

struct KeySet {
    keys: HashMap<String, Arc<VerifyingKey>>,
}

/// Serialises refreshes of one issuer and remembers when the last one was attempted.
struct RefreshGate {
    last_attempt: Mutex<Option<Instant>>,
}

/// The keys of every pinned issuer, shared by all requests.
pub struct KeyStore {
    http: HttpClient,
    cooldown: Duration,
    cache: Cache<String, Arc<KeySet>>,
    gates: HashMap<String, RefreshGate>,
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

#[derive(Deserialize)]
struct RawKeySet {
    keys: Vec<serde_json::Value>,
}

impl KeyStore {
    pub fn new(http: HttpClient, issuers: &[IssuerConfig]) -> Self {
        let gates = issuers
            .iter()
            .map(|issuer| (issuer.issuer.clone(), RefreshGate { last_attempt: Mutex::new(None) }))
            .collect();
        let cache = Cache::builder().time_to_live(MAX_KEY_AGE).build();
        Self { http, cooldown: REFRESH_COOLDOWN, cache, gates }
    }

    /// Shortens the cooldown, so tests can watch a refresh without waiting 30 s.
    pub fn set_refresh_cooldown(&mut self, cooldown: Duration) {
        self.cooldown = cooldown;
    }

    /// The key `kid` of `issuer`, fetching the issuer's keys when they are not cached or lack it.
    pub async fn key(&self, issuer: &IssuerConfig, kid: &str) -> Result<Arc<VerifyingKey>, Error> {
        if let Some(key) = self.cached(&issuer.issuer, kid).await {
            return Ok(key);
        }
        let gate = self.gates.get(&issuer.issuer).ok_or(Error::UnknownIssuer)?;
        let mut last_attempt = gate.last_attempt.lock().await;
        // Another request may have refreshed while this one waited for the gate.
        if let Some(key) = self.cached(&issuer.issuer, kid).await {
            return Ok(key);
        }
        let have_keys = self.cache.contains_key(&issuer.issuer);
        if last_attempt.is_some_and(|at| at.elapsed() < self.cooldown) {
            return Err(if have_keys {
                Error::UnknownKey
            } else {
                Error::KeysUnavailable {
                    issuer: issuer.name.clone(),
                    reason: "the last fetch failed; retrying after a cooldown".into(),
                }
            });
        }
        *last_attempt = Some(Instant::now());
        let fetched = self.fetch(issuer).await;
        crate::metrics::jwks_fetch(&issuer.name, fetched.is_ok());
        let keys = fetched.map_err(|reason| {
            tracing::warn!(issuer = %issuer.name, %reason, "fetching issuer keys failed");
            Error::KeysUnavailable { issuer: issuer.name.clone(), reason }
        })?;
        tracing::info!(issuer = %issuer.name, keys = keys.keys.len(), "fetched issuer keys");
        let found = keys.keys.get(kid).cloned();
        self.cache.insert(issuer.issuer.clone(), Arc::new(keys)).await;
        found.ok_or(Error::UnknownKey)
    }

    /// The key `kid` of `issuer` fetched anew after `stale` failed a signature: an issuer that
    /// rotates its key under the same `kid` (Jenkins' plugin, with no overlap) is trusted again
    /// without waiting for the cache to age out. Bounded by the same cooldown as an unknown `kid`;
    /// `None` while it holds, when the fetch fails, or when the issuer no longer has `kid`.
    pub async fn refreshed_key(
        &self,
        issuer: &IssuerConfig,
        kid: &str,
        stale: &Arc<VerifyingKey>,
    ) -> Option<Arc<VerifyingKey>> {
        let gate = self.gates.get(&issuer.issuer)?;
        let mut last_attempt = gate.last_attempt.lock().await;
        // Another request may have refreshed while this one waited for the gate.
        if let Some(key) = self.cached(&issuer.issuer, kid).await.filter(|key| !Arc::ptr_eq(key, stale)) {
            return Some(key);
        }
        if last_attempt.is_some_and(|at| at.elapsed() < self.cooldown) {
            return None;
        }
        *last_attempt = Some(Instant::now());
        let fetched = self.fetch(issuer).await;
        crate::metrics::jwks_fetch(&issuer.name, fetched.is_ok());
        let keys = fetched
            .inspect_err(|reason| tracing::warn!(issuer = %issuer.name, %reason, "refetching issuer keys failed"))
            .ok()?;
        tracing::info!(issuer = %issuer.name, keys = keys.keys.len(), "refetched issuer keys after a bad signature");
        let found = keys.keys.get(kid).cloned();
        self.cache.insert(issuer.issuer.clone(), Arc::new(keys)).await;
        found
    }

    async fn cached(&self, issuer: &str, kid: &str) -> Option<Arc<VerifyingKey>> {
        self.cache.get(issuer).await.and_then(|set| set.keys.get(kid).cloned())
    }

    async fn fetch(&self, issuer: &IssuerConfig) -> Result<KeySet, String> {
        let raw = fetch_raw(&self.http, issuer).await?;
        Ok(KeySet { keys: raw.keys.iter().filter_map(parse_key).collect() })
    }
}

/// The issuer's JWKS as published: from its `jwks_url`, else from discovery.
async fn fetch_raw(http: &HttpClient, issuer: &IssuerConfig) -> Result<RawKeySet, String> {
    let jwks_url = match &issuer.jwks_url {
        Some(url) => url.clone(),
        None => discover_jwks_url(http, issuer).await?,
    };
    http.get_json(&jwks_url, MAX_DOCUMENT_BYTES).await.map_err(|reason| format!("JWKS {jwks_url}: {reason}"))
}

async fn discover_jwks_url(http: &HttpClient, issuer: &IssuerConfig) -> Result<String, String> {
    let url = format!("{}/.well-known/openid-configuration", issuer.issuer.trim_end_matches('/'));
    let discovery: Discovery =
        http.get_json(&url, MAX_DOCUMENT_BYTES).await.map_err(|reason| format!("discovery {url}: {reason}"))?;
    if discovery.issuer != issuer.issuer {
        return Err("the discovery document names another issuer".into());
    }
    net::check_url_scheme(&discovery.jwks_uri).map_err(|e| format!("jwks_uri: {e}"))?;
    Ok(discovery.jwks_uri)
}

/// What an issuer publishes now, fetched as verification fetches it and cached nowhere: for
/// `ci-creds check`.
pub struct PublishedKeys {
    /// Every entry of the JWKS, usable or not.
    pub published: usize,
    /// Those that could verify a token (a `kid`, a signature key of a supported type).
    pub usable: usize,
    /// For each algorithm the issuer is configured with, how many usable keys fit it.
    pub by_algorithm: Vec<(Algorithm, usize)>,
}

pub async fn probe(http: &HttpClient, issuer: &IssuerConfig) -> Result<PublishedKeys, String> {
    let raw = fetch_raw(http, issuer).await?;
    let keys: Vec<_> = raw.keys.iter().filter_map(parse_key).collect();
    let by_algorithm = issuer
        .algorithms
        .iter()
        .map(|&alg| (alg, keys.iter().filter(|(_, key)| key.check_fits(alg).is_ok()).count()))
        .collect();
    Ok(PublishedKeys { published: raw.keys.len(), usable: keys.len(), by_algorithm })
}

/// Keys handed over whole, by issuer (`iss`), and never fetched: for a caller that holds an
/// issuer's JWKS itself, such as a test or a fuzz target, so verification needs no network.
pub struct FixedKeys {
    sets: HashMap<String, KeySet>,
}

impl FixedKeys {
    /// `jwks` pairs an issuer's `iss` with its JWKS document (`{"keys": [...]}`); keys that
    /// could not verify a token are skipped, as when fetched.
    pub fn from_jwks<'a>(jwks: impl IntoIterator<Item = (&'a str, &'a serde_json::Value)>) -> Result<Self, Error> {
        let mut sets = HashMap::new();
        for (issuer, document) in jwks {
            let raw = RawKeySet::deserialize(document).map_err(|e| Error::KeysUnavailable {
                issuer: issuer.to_owned(),
                reason: format!("the JWKS does not parse: {e}"),
            })?;
            sets.insert(issuer.to_owned(), KeySet { keys: raw.keys.iter().filter_map(parse_key).collect() });
        }
        Ok(Self { sets })
    }

    pub fn key(&self, issuer: &IssuerConfig, kid: &str) -> Result<Arc<VerifyingKey>, Error> {
        let set = self.sets.get(&issuer.issuer).ok_or_else(|| Error::KeysUnavailable {
            issuer: issuer.name.clone(),
            reason: "no keys were given for this issuer".into(),
        })?;
        set.keys.get(kid).cloned().ok_or(Error::UnknownKey)
    }
}

/// An RSA key's `n` or `e` (base64url of a big-endian integer) without leading zero octets. RFC
/// 7518 §6.3.1.1 forbids them, yet some issuers write them (Jenkins' `oidc-provider` keeps Java's
/// sign octet); they are read as the number they are, or a valid signature would never verify.
fn minimal_integer(base64url: &str) -> Option<String> {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let octets = URL_SAFE_NO_PAD.decode(base64url.trim_end_matches('=')).ok()?;
    let significant = octets.iter().position(|&octet| octet != 0).unwrap_or(octets.len());
    Some(URL_SAFE_NO_PAD.encode(&octets[significant..]))
}

/// A JWK usable for verification, keyed by its `kid`; keys without `kid`, symmetric (`oct`)
/// keys, encryption keys and keys of unsupported types are skipped.
fn parse_key(value: &serde_json::Value) -> Option<(String, Arc<VerifyingKey>)> {
    let mut jwk: Jwk = serde_json::from_value(value.clone()).ok()?;
    if let AlgorithmParameters::RSA(rsa) = &mut jwk.algorithm {
        rsa.n = minimal_integer(&rsa.n)?;
        rsa.e = minimal_integer(&rsa.e)?;
    }
    let kid = jwk.common.key_id.clone()?;
    if matches!(jwk.common.public_key_use, Some(ref usage) if *usage != PublicKeyUse::Signature) {
        return None;
    }
    let kty = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => KeyType::Rsa,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => KeyType::Ec(EcCurve::P256),
            EllipticCurve::P384 => KeyType::Ec(EcCurve::P384),
            _ => return None,
        },
        _ => return None,
    };
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    let pin = match jwk.common.key_algorithm {
        None => AlgPin::Unpinned,
        Some(named) => format!("{named:?}").parse().map_or(AlgPin::NotASignatureAlgorithm, AlgPin::Only),
    };
    Some((kid, Arc::new(VerifyingKey { key, kty, pin })))
}
