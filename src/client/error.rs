//! The client's one error type; each variant is one documented exit code.

use std::fmt;

use serde::Deserialize;

/// Shown under `ci-creds get --help` and `ci-creds revoke --help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  ok
  1  the credentials could not be written (output file, $GITHUB_ENV)
  2  usage: bad arguments, a format the granted credentials cannot fill, a request the broker calls invalid
  3  no CI token found, or the CI's token source failed
  4  refused by the broker (401, 403, 409): the error code and the reasons are printed
  5  broker unreachable or failing (5xx) after 3 retries with backoff";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    NoToken(String),
    #[error("{0}")]
    Refused(Refusal),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Output(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Output(_) => 1,
            Self::Usage(_) => 2,
            Self::NoToken(_) => 3,
            Self::Refused(_) => 4,
            Self::Unavailable(_) => 5,
        }
    }
}

/// The broker's JSON error: its stable code, message, and for `access_denied` each role's reasons.
/// The broker never puts secrets in these, so they are safe to print.
#[derive(Debug, Default, Deserialize)]
pub struct Refusal {
    #[serde(skip)]
    pub status: u16,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub request_id: String,
    #[serde(default)]
    pub denied: Vec<Denial>,
}

#[derive(Debug, Deserialize)]
pub struct Denial {
    pub role: String,
    #[serde(default)]
    pub reasons: Vec<String>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = if self.error.is_empty() { "(no error code)" } else { &self.error };
        write!(f, "the broker refused: HTTP {} {code}: {}", self.status, self.message)?;
        if !self.request_id.is_empty() {
            write!(f, " (request_id {})", self.request_id)?;
        }
        for denial in &self.denied {
            for reason in &denial.reasons {
                write!(f, "\n  {}: {reason}", denial.role)?;
            }
        }
        Ok(())
    }
}
