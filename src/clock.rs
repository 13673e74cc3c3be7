//! The broker's one wall clock: Unix time, as the store keeps it and the tokens and APIs state it.

/// Unix seconds.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Unix milliseconds, for the revocation queue's schedule and the exposure window.
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}
