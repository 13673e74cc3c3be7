//! The command-line shape of `ci-creds policy …`, kept here so `main.rs` only dispatches.

use std::path::PathBuf;

use clap::Subcommand;

use super::{Error, MappingChoice, Report, check, explain, parse_kind, policy_dir, run_tests};
use crate::ci::CiKind;

#[derive(Subcommand)]
pub enum PolicyCommand {
    /// Load every policy file of DIR (default `policy`); report errors with file:line and risky rules.
    Check {
        /// The broker's config: its issuers' kinds let rules be judged as their CI's (an Azure
        /// Pipelines rule that pins no ids); DIR defaults to its `policy_dir`.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        dir: Option<PathBuf>,
    },
    /// Judge a claim set (a decoded token payload) against roles, printing every rule and condition.
    Explain {
        #[arg(long, value_name = "FILE.json")]
        claims: PathBuf,
        /// Roles to explain (repeat or comma-separate); every role when omitted.
        #[arg(long, value_delimiter = ',')]
        role: Vec<String>,
        /// A runner fact the CI's API or a webhook would tell (repeatable): environment, id, name,
        /// group, labels (comma-separated), queue, type or manager, e.g. `--runner-fact group=release`.
        #[arg(long = "runner-fact", value_name = "NAME=VALUE", value_parser = super::runner_facts::parse_arg)]
        runner_fact: Vec<(String, String)>,
        #[command(flatten)]
        mapping: MappingArgs,
        dir: Option<PathBuf>,
    },
    /// Print the JSON Schema of policy files (for editors; checked in as policy/policy.schema.json).
    Schema,
    /// Run the `*_test.yaml` tables of DIR against its policies; print `N passed, M failed`.
    Test {
        #[command(flatten)]
        mapping: MappingArgs,
        dir: Option<PathBuf>,
    },
}

/// Which issuer claims belong to; inferred from well-known `iss` values and claim shapes when unset.
#[derive(clap::Args)]
pub struct MappingArgs {
    /// The broker's config: `iss` is looked up in its `[[issuers]]`; DIR defaults to its `policy_dir`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["issuer", "kind"])]
    pub config: Option<PathBuf>,
    /// The configured issuer name policy rules use (with --kind).
    #[arg(long, requires = "kind")]
    pub issuer: Option<String>,
    #[arg(long, requires = "issuer", value_parser = parse_kind)]
    pub kind: Option<CiKind>,
}

/// Runs one policy command; the report's `ok` decides the exit code (0 or 1).
pub fn run(command: PolicyCommand) -> Result<Report, Error> {
    match command {
        PolicyCommand::Check { config, dir } => {
            let choice = config.map_or(MappingChoice::Infer, MappingChoice::Config);
            check(&policy_dir(dir, &choice), &choice)
        }
        PolicyCommand::Schema => Ok(Report { text: crate::policy::json_schema(), ok: true }),
        PolicyCommand::Explain { claims, role, runner_fact, mapping, dir } => {
            let choice = mapping.choice();
            explain(&policy_dir(dir, &choice), &claims, &role, &runner_fact, &choice)
        }
        PolicyCommand::Test { mapping, dir } => {
            let choice = mapping.choice();
            run_tests(&policy_dir(dir, &choice), &choice)
        }
    }
}

impl MappingArgs {
    fn choice(self) -> MappingChoice {
        match (self.config, self.issuer, self.kind) {
            (Some(config), _, _) => MappingChoice::Config(config),
            (None, Some(issuer), Some(kind)) => MappingChoice::Explicit { issuer, kind },
            _ => MappingChoice::Infer,
        }
    }
}
