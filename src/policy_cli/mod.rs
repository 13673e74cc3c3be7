//! `ci-creds policy check|explain|test`: the tooling for people who write policy. No broker is
//! needed; policy itself stays pure, so this layer does the reading and the printing.

mod args;
mod check;
mod explain;
mod mapping;
mod runner_facts;
mod test_file;
mod tests_run;

use std::path::PathBuf;

pub use args::{MappingArgs, PolicyCommand, run};
pub use check::check;
pub use explain::explain;
pub use mapping::{MappingChoice, parse_kind};
pub use tests_run::run_tests;

use crate::{config, identity, policy};

/// Why a policy command could not do its work (as opposed to finding errors it reports).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{0}")]
    Policy(#[from] policy::Error),
    #[error("{0}")]
    Config(#[from] config::Error),
    #[error("{path}: {message}")]
    Claims { path: String, message: String },
    #[error("{0}")]
    Mapping(String),
    #[error("the claims do not map onto a {kind} job: {source}")]
    Identity { kind: &'static str, source: identity::Error },
}

/// What a command prints on stdout, and whether it found everything in order (exit 0) or not (1).
#[derive(Debug)]
pub struct Report {
    pub text: String,
    pub ok: bool,
}

fn read(path: &std::path::Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.display().to_string(), source })
}

/// The policy directory: given, else the `policy_dir` of `--config`, else `policy`.
pub fn policy_dir(dir: Option<PathBuf>, mapping: &MappingChoice) -> PathBuf {
    dir.or_else(|| match mapping {
        MappingChoice::Config(path) => mapping::config_policy_dir(path),
        _ => None,
    })
    .unwrap_or_else(|| PathBuf::from("policy"))
}
