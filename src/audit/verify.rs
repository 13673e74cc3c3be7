//! Checking a chain: every line is an event whose `prev` is the hash of the line before it and
//! whose `seq` follows it; the first names `GENESIS` (or the head of the file it continues).

use std::fmt;

use serde_json::Value;

use super::{GENESIS, line_hash};

/// A whole chain: how many events, and the head hash to anchor elsewhere.
#[derive(Debug, PartialEq, Eq)]
pub struct Verified {
    pub events: u64,
    pub head: String,
}

/// The first place the chain breaks; `line` counts from 1.
#[derive(Debug, PartialEq, Eq)]
pub struct Break {
    pub line: usize,
    pub reason: String,
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

/// Verifies `contents`, a whole audit file. `after` is the head hash of the file it continues
/// (after rotation); without it the first event must start a chain.
pub fn verify(contents: &[u8], after: Option<&str>) -> Result<Verified, Break> {
    let mut prev = after.unwrap_or(GENESIS).to_owned();
    let mut last_seq: Option<u64> = None;
    let mut events = 0;
    let body = contents.strip_suffix(b"\n").unwrap_or(contents);
    if body.is_empty() {
        return Ok(Verified { events: 0, head: prev });
    }
    for (index, line) in body.split(|&b| b == b'\n').enumerate() {
        let number = index + 1;
        let broken = |reason: String| Break { line: number, reason };
        let event: Value = serde_json::from_slice(line)
            .map_err(|_| broken("not a JSON audit event (a torn or edited line)".into()))?;
        let seq = event.get("seq").and_then(Value::as_u64).ok_or_else(|| broken("no `seq`".into()))?;
        let claimed = event.get("prev").and_then(Value::as_str).ok_or_else(|| broken("no `prev`".into()))?;
        if claimed != prev {
            let what = match (number, last_seq) {
                (1, _) if after.is_some() => "`prev` is not the given head of the previous file".to_owned(),
                (1, _) => format!("`prev` is not the chain's start ({GENESIS}); lines before it are missing"),
                (_, Some(before)) if seq > before + 1 => format!(
                    "`prev` is not the hash of line {}, and seq jumps from {before} to {seq}: {} event(s) removed",
                    number - 1,
                    seq - before - 1
                ),
                (_, Some(before)) if seq <= before => format!(
                    "`prev` is not the hash of line {}, and seq {seq} does not follow {before}: lines reordered",
                    number - 1
                ),
                _ => format!("`prev` is not the hash of line {}: line {} was edited", number - 1, number - 1),
            };
            return Err(broken(what));
        }
        if let Some(before) = last_seq
            && seq != before + 1
        {
            return Err(broken(format!("seq {seq} does not follow {before}, though `prev` matches: edited seq")));
        }
        prev = line_hash(line);
        last_seq = Some(seq);
        events += 1;
    }
    Ok(Verified { events, head: prev })
}
