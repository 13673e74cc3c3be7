//! ECDSA's malleability, for replay tests: a P-256 signature (r, s) verifies as (r, n − s) too.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The order n of P-256's base point (SEC 2 v2, §2.4.2), big-endian.
const P256_ORDER: [u8; 32] = [
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xBC, 0xE6, 0xFA,
    0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
];

/// `token`, an ES256 JWS, with its signature's `s` replaced by `n − s`: the same header and
/// payload, another signature that verifies under the same key.
pub fn with_s_negated(token: &str) -> String {
    let (signed, signature) = token.rsplit_once('.').expect("a JWS");
    let signature = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
    assert_eq!(signature.len(), 64, "an ES256 signature is r || s, 32 octets each");
    let (r, s) = signature.split_at(32);
    let mut negated = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let difference = i16::from(P256_ORDER[i]) - i16::from(s[i]) - borrow;
        borrow = i16::from(difference < 0);
        negated[i] = (difference + 256 * borrow) as u8;
    }
    assert_eq!(borrow, 0, "s < n");
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode([r, &negated[..]].concat()))
}
