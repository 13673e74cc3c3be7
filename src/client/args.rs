//! The command-line shape of `get` and `revoke`, kept here so `main.rs` only dispatches.

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use clap::builder::PossibleValue;

use crate::ci::CiKind;

/// How the credentials are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `export NAME=value` lines, shell-quoted, for `eval "$(ci-creds get …)"`.
    Env,
    /// The broker's answer as is.
    Json,
    /// The JSON an AWS `credential_process` prints (needs exactly one AWS credential).
    CredentialProcess,
    /// A CI's own way of handing variables to later steps (`Ci::step_output`), named as it says:
    /// `github`, `gitlab-dotenv`.
    Step(CiKind),
}

/// Every format, in the order `--help` lists them.
static FORMATS: LazyLock<Vec<Format>> = LazyLock::new(|| {
    let steps = CiKind::ALL.into_iter().filter(|kind| kind.ci().step_output.as_ref().is_some()).map(Format::Step);
    [Format::Env, Format::Json].into_iter().chain(steps).chain([Format::CredentialProcess]).collect()
});

impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Self::Env => PossibleValue::new("env")
                .help("`export NAME=value` lines, shell-quoted, for `eval \"$(ci-creds get …)\"`"),
            Self::Json => PossibleValue::new("json").help("The broker's answer as is"),
            Self::CredentialProcess => PossibleValue::new("credential-process")
                .help("The JSON an AWS `credential_process` prints (needs exactly one AWS credential)"),
            Self::Step(kind) => {
                let step = kind.ci().step_output.as_ref()?;
                PossibleValue::new(step.name).help(step.help)
            }
        })
    }
}

/// Where the job's OIDC token comes from and what audience it is requested for.
#[derive(Clone, Debug, clap::Args)]
pub struct TokenArgs {
    /// The audience the CI token is requested for; default $CI_CREDS_AUDIENCE, else the broker URL.
    #[arg(long, env = "CI_CREDS_AUDIENCE")]
    pub audience: Option<String>,
    /// Read the CI token from this file (for any CI not detected from the environment).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The environment variable holding the token (GitLab `id_tokens` name); default CI_CREDS_ID_TOKEN.
    #[arg(long, value_name = "NAME")]
    pub token_env: Option<String>,
    /// Delay before the first retry when the broker is unreachable or failing; doubles per retry.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = humantime::parse_duration)]
    pub retry_delay: Duration,
}

impl TokenArgs {
    pub(super) fn audience_or(&self, broker: &str) -> String {
        self.audience.clone().filter(|a| !a.is_empty()).unwrap_or_else(|| broker.trim_end_matches('/').to_owned())
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct GetArgs {
    /// The broker's base URL.
    #[arg(long, env = "CI_CREDS_BROKER", value_name = "URL")]
    pub broker: String,
    /// Roles to get (repeat or comma-separate); all are granted or none is.
    #[arg(long = "role", required = true, value_delimiter = ',', value_name = "NAME")]
    pub roles: Vec<String>,
    /// Requested lifetime, e.g. 10m; the broker clamps it to each role's max_ttl.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub ttl: Option<Duration>,
    #[arg(long, value_enum, default_value = "env")]
    pub format: Format,
    /// Write the credentials to FILE (mode 0600) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub token: TokenArgs,
}

#[derive(Clone, Debug, clap::Args)]
pub struct RevokeArgs {
    /// The broker's base URL.
    #[arg(long, env = "CI_CREDS_BROKER", value_name = "URL")]
    pub broker: String,
    #[command(flatten)]
    pub token: TokenArgs,
}
