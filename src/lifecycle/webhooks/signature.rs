//! Constant-time checks of webhook signatures and tokens.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Whether `signature_hex` is the HMAC-SHA256 of `message` under `key`.
pub fn hmac_sha256_matches(key: &SecretString, message: &[&[u8]], signature_hex: &str) -> bool {
    let Ok(signature) = hex::decode(signature_hex) else { return false };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key.expose_secret().as_bytes()) else { return false };
    for part in message {
        mac.update(part);
    }
    mac.verify_slice(&signature).is_ok()
}

/// Whether a presented shared token equals the configured one, in constant time.
pub fn token_matches(expected: &SecretString, presented: &str) -> bool {
    expected.expose_secret().as_bytes().ct_eq(presented.as_bytes()).into()
}
