//! How a CI hands a job's credentials to its later steps, for `ci-creds get --format <name>`:
//! `NAME=value` lines, where the CI reads them, and how its logs are told to mask each secret.

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
    /// What the user should know about where the credentials end up.
    pub warning: Option<&'static str>,
}
