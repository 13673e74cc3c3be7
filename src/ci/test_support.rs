//! What the CIs' unit tests share: the fixtures, and the HTTP Basic header of CIs that sign nothing.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderValue};

/// A file of `tests/fixtures/`, as bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    std::fs::read(dir.join(name)).expect("fixture readable")
}

/// `Authorization: Basic …` for `user:password`, or no header at all.
pub fn basic_auth(credentials: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(credentials) = credentials {
        let value = format!("Basic {}", STANDARD.encode(credentials));
        headers.insert("authorization", HeaderValue::from_str(&value).expect("base64 is header text"));
    }
    headers
}
