//! Reading a request body with a size limit that still lets the client read our answer.

use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body_util::BodyExt;

use super::ApiError;

/// How much of an oversized body is read and discarded before answering 413. Without it the
/// connection closes while the client is still sending, and the client sees a broken pipe
/// instead of the answer.
const DRAIN_LIMIT_BYTES: usize = 16 * 1024 * 1024;
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn read_limited(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let mut body = body;
    let mut collected = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| ApiError::InvalidRequest("the request body could not be read".into()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if collected.len() + data.len() > limit {
            drain(body, collected.len() + data.len()).await;
            return Err(ApiError::PayloadTooLarge);
        }
        collected.extend_from_slice(&data);
    }
    Ok(Bytes::from(collected))
}

async fn drain(mut body: Body, already_read: usize) {
    let discard = async {
        let mut read = already_read;
        while read < DRAIN_LIMIT_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => read += frame.data_ref().map_or(0, |data| data.len()),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, discard).await;
}
