//! An installation token is its own revocation key: `DELETE /installation/token` takes the token
//! itself. So the lease must keep it, and keeps it sealed (AES-256-GCM) under a key derived from
//! the App's private key. The store alone, stolen or read, yields no usable token; whoever holds
//! the App's private key could mint tokens anyway. Every replica with the same App derives the
//! same key, so any of them can revoke.

use aws_lc_rs::aead::{AES_256_GCM, Aad, Nonce, RandomizedNonceKey};
use aws_lc_rs::hkdf::{HKDF_SHA256, Salt};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::{ExposeSecret, SecretString};

/// Binds a sealed token to its purpose, so the key could never open anything else.
const CONTEXT: &[u8] = b"ci-creds github installation token v1";
const NONCE_BYTES: usize = 12;

pub struct TokenSeal {
    key: RandomizedNonceKey,
}

/// The sealed token could not be opened: another App key sealed it, or it was altered.
#[derive(Debug)]
pub struct Unsealable;

impl TokenSeal {
    pub fn new(app_private_key_pem: &SecretString) -> Self {
        let prk = Salt::new(HKDF_SHA256, CONTEXT).extract(app_private_key_pem.expose_secret().as_bytes());
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's 8,160-byte ceiling, and AES-256 takes 32 bytes.
        prk.expand(&[CONTEXT], KeyLength).and_then(|okm| okm.fill(&mut key)).expect("32-byte HKDF output");
        Self { key: RandomizedNonceKey::new(&AES_256_GCM, &key).expect("a 32-byte AES-256 key") }
    }

    /// `base64url(nonce ‖ ciphertext ‖ tag)`.
    pub fn seal(&self, token: &SecretString) -> String {
        let mut sealed = token.expose_secret().as_bytes().to_vec();
        let nonce = self.key.seal_in_place_append_tag(Aad::from(CONTEXT), &mut sealed).expect("AES-GCM seals");
        let mut out = nonce.as_ref().to_vec();
        out.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    pub fn open(&self, sealed: &str) -> Result<SecretString, Unsealable> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed).map_err(|_| Unsealable)?;
        if bytes.len() < NONCE_BYTES {
            return Err(Unsealable);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Unsealable)?;
        let mut ciphertext = ciphertext.to_vec();
        let plain = self.key.open_in_place(nonce, Aad::from(CONTEXT), &mut ciphertext).map_err(|_| Unsealable)?;
        String::from_utf8(plain.to_vec()).map(SecretString::from).map_err(|_| Unsealable)
    }
}

struct KeyLength;

impl aws_lc_rs::hkdf::KeyType for KeyLength {
    fn len(&self) -> usize {
        32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal_with(key: &str) -> TokenSeal {
        TokenSeal::new(&SecretString::from(key.to_owned()))
    }

    #[test]
    fn opens_what_it_sealed_and_the_sealed_text_holds_no_token() {
        let seal = seal_with("-----BEGIN PRIVATE KEY----- one");
        let token = SecretString::from("ghs_16C7e42F292c6912E7710c838347Ae178B4a".to_owned());
        let sealed = seal.seal(&token);
        assert!(!sealed.contains("ghs_"));
        assert_ne!(sealed, seal.seal(&token), "a fresh nonce each time");
        assert_eq!(seal.open(&sealed).expect("opens").expose_secret(), token.expose_secret());
    }

    #[test]
    fn another_app_key_or_an_altered_text_cannot_open_it() {
        let sealed = seal_with("key one").seal(&SecretString::from("ghs_x".to_owned()));
        assert!(seal_with("key two").open(&sealed).is_err());
        let mut altered = sealed.into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert!(seal_with("key one").open(&String::from_utf8(altered).unwrap()).is_err());
        assert!(seal_with("key one").open("").is_err());
        assert!(seal_with("key one").open("not base64!").is_err());
    }
}
