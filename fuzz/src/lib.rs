//! What the fuzz targets share: a verifier whose issuer key the target holds, and a way to turn
//! fuzz input into webhook headers and a body. Each target names one trust boundary; the input
//! formats are described in fuzz/README.md.

pub mod token;
pub mod webhook;

/// Splits `data` at the first `separator`: the part before it, and the rest (empty without one).
pub fn split_at_first<'a>(data: &'a [u8], separator: &[u8]) -> (&'a [u8], &'a [u8]) {
    match data.windows(separator.len()).position(|window| window == separator) {
        Some(at) => (&data[..at], &data[at + separator.len()..]),
        None => (data, &[]),
    }
}
