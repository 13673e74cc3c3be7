//! The audit trail: one JSON line per decision and lifecycle step, each carrying `prev`, the
//! SHA-256 of the previous line's exact bytes, so an edited, removed or reordered line breaks
//! the chain. `verify` checks a file; `ci-creds audit verify` prints what it finds.
//!
//! A chain without a key only shows tampering by someone who did not rewrite every later line;
//! operators anchor it by copying the head hash (`audit verify` prints it) somewhere else.

mod events;
mod verify;

pub use events::{Event, JobIdentity, JobRef};
pub use verify::{Break, Verified, verify};

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `prev` of a chain's first event.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Enough of a file's end to hold its last event, read to continue the chain after a restart.
const TAIL_BYTES: u64 = 1024 * 1024;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Appended to; the chain continues from its last line across restarts. Relative to the
    /// config file.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// Also (or only) write every event to stdout; each process's stdout is its own chain.
    #[serde(default)]
    pub stdout: bool,
}

impl AuditConfig {
    pub fn enabled(&self) -> bool {
        self.file.is_some() || self.stdout
    }
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("cannot open the audit file {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("the audit file {path} ends in a line that is not an audit event; move it aside or repair it")]
    UnreadableTail { path: String },
}

/// Where events go, and the chain's head. Events are written synchronously under one lock so
/// the file's order is the chain's order.
pub struct Audit {
    sink: Option<Mutex<Chain>>,
}

struct Chain {
    file: Option<File>,
    stdout: bool,
    prev: String,
    seq: u64,
}

#[derive(Serialize)]
struct Envelope<'a> {
    seq: u64,
    time: String,
    #[serde(flatten)]
    event: &'a Event<'a>,
    prev: &'a str,
}

/// The hex SHA-256 of one line (without its newline): what the next line's `prev` holds.
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

impl Audit {
    /// Records nothing: for a broker configured without an audit trail.
    pub fn disabled() -> Self {
        Self { sink: None }
    }

    pub fn open(config: &AuditConfig) -> Result<Self, Error> {
        if !config.enabled() {
            return Ok(Self::disabled());
        }
        let (file, prev, seq) = match &config.file {
            Some(path) => {
                let (file, prev, seq) = open_file(path)?;
                (Some(file), prev, seq)
            }
            None => (None, GENESIS.to_owned(), 0),
        };
        Ok(Self { sink: Some(Mutex::new(Chain { file, stdout: config.stdout, prev, seq })) })
    }

    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Appends `event`. A write that fails is logged and counted, and the request goes on:
    /// refusing credentials because a disk is full would turn an audit outage into a CI outage.
    pub fn record(&self, event: &Event<'_>) {
        let Some(sink) = &self.sink else { return };
        let mut chain = sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let time = OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default();
        let envelope = Envelope { seq: chain.seq + 1, time, event, prev: &chain.prev };
        let line = match serde_json::to_string(&envelope) {
            Ok(line) => line,
            Err(error) => {
                tracing::error!(%error, event = event.name(), "cannot encode an audit event");
                crate::metrics::audit_write_failed();
                return;
            }
        };
        let mut bytes = line.into_bytes();
        let hash = line_hash(&bytes);
        bytes.push(b'\n');
        if let Some(file) = &mut chain.file
            && let Err(error) = file.write_all(&bytes)
        {
            tracing::error!(%error, event = event.name(), "cannot write an audit event");
            crate::metrics::audit_write_failed();
            return;
        }
        if chain.stdout {
            let mut stdout = std::io::stdout().lock();
            if stdout.write_all(&bytes).and_then(|()| stdout.flush()).is_err() {
                crate::metrics::audit_write_failed();
            }
        }
        chain.prev = hash;
        chain.seq += 1;
    }
}

/// Opens `path` for appending and reads the chain's head from its last line.
fn open_file(path: &Path) -> Result<(File, String, u64), Error> {
    let display = || path.display().to_string();
    let mut options = std::fs::OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|source| Error::Open { path: display(), source })?;
    let len = file.metadata().map_err(|source| Error::Open { path: display(), source })?.len();
    if len == 0 {
        return Ok((file, GENESIS.to_owned(), 0));
    }
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .and_then(|_| file.read_to_end(&mut tail))
        .map_err(|source| Error::Open { path: display(), source })?;
    if tail.last() != Some(&b'\n') {
        // A write torn by a crash: end it, so it stands alone as the break `verify` will report,
        // and chain on from the last whole line.
        file.write_all(b"\n").map_err(|source| Error::Open { path: display(), source })?;
        let cut = tail.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        tail.truncate(cut);
        if tail.is_empty() {
            return Ok((file, GENESIS.to_owned(), 0));
        }
    }
    let body = &tail[..tail.len() - 1];
    let last = body.rsplit(|&b| b == b'\n').next().unwrap_or(body);
    let seq = serde_json::from_slice::<serde_json::Value>(last)
        .ok()
        .and_then(|event| event.get("seq").and_then(serde_json::Value::as_u64))
        .ok_or_else(|| Error::UnreadableTail { path: display() })?;
    Ok((file, line_hash(last), seq))
}
