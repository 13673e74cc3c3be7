//! How a CI hands a job's credentials to its later steps, for `ci-creds get --format <name>`:
//! `NAME=value` lines or the CI's own syntax, where the CI reads them, and how its logs are told
//! to mask each secret.

pub struct StepOutput {
    /// The `--format` value.
    pub name: &'static str,
    /// What `ci-creds get --help` says of it.
    pub help: &'static str,
    /// The variable naming the file the CI reads later steps' variables from, and where it is
    /// set, for the error when it is missing; without one, the lines go to stdout or `--output`.
    pub env_file: Option<(&'static str, &'static str)>,
    /// The line that makes the CI mask one secret in its logs, printed before any is written.
    pub mask: Option<fn(&str) -> String>,
    /// Each variable's line where the CI's syntax is not `NAME=value`, from its name, value and
    /// whether it is secret; the error says why the value cannot be written, never the value.
    pub line: Option<VariableLine>,
    /// What the user should know about where the credentials end up.
    pub warning: Option<&'static str>,
}

/// A variable's line from its name, its value and whether it is secret, or why it cannot be one.
pub type VariableLine = fn(&str, &str, bool) -> Result<String, String>;
