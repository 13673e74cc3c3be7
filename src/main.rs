//! The `ci-creds` command line.
#![forbid(unsafe_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ci_creds::config::Config;
use ci_creds::dev::{DevIssuer, SigningKey, live_claims};
use ci_creds::inspect::{self, Format};
use ci_creds::store::{LeaseState, Store};
use ci_creds::{audit, client};
use ci_creds::{fleet, policy_cli};
use clap::{Parser, Subcommand};
use serde_json::Value;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "ci-creds",
    version,
    about = "Credential lifecycle broker for CI: job OIDC tokens in, short-lived job-bound credentials out"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the broker.
    Serve {
        #[arg(long, value_name = "PATH")]
        config: PathBuf,
        /// Check config, secrets, policy, the store and the backends, print a summary and exit
        /// (0 ok, 1 not): for a policy repository's CI and for init containers.
        #[arg(long)]
        check_config: bool,
    },
    /// Try what a serving broker will need (issuers' keys, CI API credentials, webhook secrets,
    /// Vault, AWS, the GitHub App, the store) and print one line per item: ok, warn or failed
    /// with the fix.
    #[command(after_help = "Exit codes: 0 every item ok or warn, 1 an item failed, 2 the config does not load.")]
    Check {
        #[arg(long, value_name = "PATH")]
        config: PathBuf,
        /// A JSON array of {item, status, detail, fix} instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Jobs the broker has seen or ended, from its store.
    #[command(subcommand)]
    Jobs(JobsCommand),
    /// Leases (one per minted credential) and their revocation state, from the broker's store.
    #[command(subcommand)]
    Leases(LeasesCommand),
    /// The runners the broker has seen serve jobs, and the fleet's hygiene, from its store.
    #[command(subcommand)]
    Runners(RunnersCommand),
    /// Inside a CI job: exchange the job's OIDC token for credentials and print or write them.
    #[command(after_help = client::EXIT_CODES_HELP)]
    Get(client::GetArgs),
    /// Inside a CI job: end the job at the broker, revoking every credential it got.
    #[command(after_help = client::EXIT_CODES_HELP)]
    Revoke(client::RevokeArgs),
    /// Local development helpers (loopback only; never part of a production deployment).
    #[command(subcommand)]
    Dev(DevCommand),
    /// Check, explain and test policy files; no broker needed. Exit 0 ok, 1 errors or failures, 2 usage.
    #[command(subcommand)]
    Policy(policy_cli::PolicyCommand),
    /// The audit trail.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Print the HTTP API's OpenAPI 3.1 document (as checked in at openapi/openapi.json).
    Openapi,
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Check FILE's hash chain; print the event count and head hash, or the first break (exit 1).
    Verify {
        file: PathBuf,
        /// The head hash of the file this one continues (after rotation).
        #[arg(long, value_name = "SHA256")]
        after: Option<String>,
    },
}

/// What every listing of the store takes.
#[derive(clap::Args)]
struct ListArgs {
    #[arg(long, value_name = "PATH")]
    config: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    #[arg(long, default_value_t = 100)]
    limit: i64,
}

#[derive(Subcommand)]
enum JobsCommand {
    /// Most recent first.
    List(ListArgs),
}

#[derive(Subcommand)]
enum LeasesCommand {
    /// Most recent first.
    List {
        #[command(flatten)]
        list: ListArgs,
        /// Only leases in this state (pending, active, revoking, revoked, expired, failed).
        #[arg(long, value_parser = parse_lease_state)]
        state: Option<LeaseState>,
    },
}

#[derive(Subcommand)]
enum RunnersCommand {
    /// The runners whose jobs the store keeps (`lifecycle.runner_retention`), the worst first
    /// (most targets missed), then the most recently seen: the worst 500 unless `--all`.
    List {
        #[arg(long, value_name = "PATH")]
        config: PathBuf,
        #[arg(long, value_enum, default_value = "table")]
        format: fleet::Format,
        #[command(flatten)]
        filter: fleet::RunnerFilter,
    },
    /// The hygiene figures with their targets, then the worst 500 runners (unless `--all`): for
    /// jobs seen since `--since`.
    Report {
        #[arg(long, value_name = "PATH")]
        config: PathBuf,
        #[arg(long, default_value = "30d", value_parser = humantime::parse_duration)]
        since: std::time::Duration,
        #[arg(long, value_enum, default_value = "table")]
        format: fleet::Format,
        /// Write the report here instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        filter: fleet::RunnerFilter,
    },
}

fn parse_lease_state(text: &str) -> Result<LeaseState, String> {
    text.parse()
}

#[derive(Subcommand)]
enum DevCommand {
    /// Serve a local OIDC issuer (discovery + JWKS) whose key is kept in DIR.
    Issuer {
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// Print tokens from the local issuer in DIR, one a line, with the claims of a CI fixture made
    /// live; each has its own `jti`.
    Token {
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// A JSON file of claims, e.g. a CI system's documented token (tests/fixtures).
        #[arg(long, value_name = "FILE")]
        claims: PathBuf,
        #[arg(long)]
        audience: String,
        /// Override a claim: NAME=VALUE (VALUE as JSON if it parses, else a string); `{n}` in its
        /// strings becomes the token's index (0, 1, …): `--set check_run_id={n}`.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        overrides: Vec<String>,
        #[arg(long, default_value_t = 300)]
        lifetime_seconds: i64,
        /// How many tokens to print.
        #[arg(long, default_value_t = 1)]
        count: usize,
    },
}

const KEY_FILE: &str = "signing-key.pem";
const URL_FILE: &str = "issuer-url";

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match Cli::parse().command {
        Command::Serve { config, check_config: true } => {
            println!("{}", ci_creds::server::check(&Config::load(&config)?).await?);
        }
        Command::Serve { config, check_config: false } => {
            let config = Config::load(&config)?;
            ci_creds::server::serve(config).await?;
        }
        Command::Check { config, json } => {
            let config = match Config::load(&config) {
                Ok(config) => config,
                Err(error) => {
                    eprintln!("ci-creds: {error}");
                    std::process::exit(2);
                }
            };
            let report = ci_creds::preflight::run(&config).await;
            if json {
                println!("{}", report.json());
            } else {
                print!("{}", report.text());
            }
            std::process::exit(report.exit_code());
        }
        Command::Jobs(JobsCommand::List(list)) => {
            let store = open_store(&list.config).await?;
            print!("{}", inspect::jobs(&store, list.limit, list.format).await?);
        }
        Command::Leases(LeasesCommand::List { list, state }) => {
            let store = open_store(&list.config).await?;
            print!("{}", inspect::leases(&store, state, list.limit, list.format).await?);
        }
        Command::Runners(RunnersCommand::List { config, format, filter }) => {
            let report = fleet_report(&config, std::time::Duration::MAX, &filter.bounded()).await?;
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            fleet::write_list(&report, format, &mut stdout)?;
            stdout.flush()?;
        }
        Command::Runners(RunnersCommand::Report { config, since, format, output, filter }) => {
            let report = fleet_report(&config, since, &filter.bounded()).await?;
            match output {
                Some(path) => {
                    let writing = || format!("writing {}", path.display());
                    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).with_context(writing)?);
                    fleet::write_report(&report, format, &mut file).with_context(writing)?;
                    file.flush().with_context(writing)?;
                }
                None => {
                    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
                    fleet::write_report(&report, format, &mut stdout)?;
                    stdout.flush()?;
                }
            }
        }
        Command::Dev(DevCommand::Issuer { dir, listen }) => run_dev_issuer(&dir, listen).await?,
        Command::Dev(DevCommand::Token { dir, claims, audience, overrides, lifetime_seconds, count }) => {
            let tokens = dev_tokens(&dir, &claims, &audience, &overrides, lifetime_seconds, count)?;
            let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
            for token in tokens {
                writeln!(stdout, "{token}")?;
            }
            stdout.flush()?;
        }
        Command::Policy(command) => {
            let report = policy_cli::run(command)?;
            print!("{}", report.text);
            if !report.ok {
                std::process::exit(1);
            }
        }
        Command::Audit(AuditCommand::Verify { file, after }) => {
            let contents = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            match audit::verify(&contents, after.as_deref()) {
                Ok(verified) => println!("ok: {} events; head {}", verified.events, verified.head),
                Err(broken) => {
                    println!("broken: {}: {broken}", file.display());
                    std::process::exit(1);
                }
            }
        }
        Command::Openapi => print!("{}", ci_creds::api::openapi_json()),
        Command::Get(args) => exit_with(client::get(args).await),
        Command::Revoke(args) => exit_with(client::revoke(args).await),
    }
    Ok(())
}

/// The fleet as the store has it, for jobs seen within `since` of now, with the runners `filter`
/// keeps.
async fn fleet_report(
    config: &Path,
    since: std::time::Duration,
    filter: &fleet::RunnerFilter,
) -> Result<fleet::FleetReport> {
    let store = open_store(config).await?;
    let now = ci_creds::clock::now();
    let since = now.saturating_sub(i64::try_from(since.as_secs()).unwrap_or(i64::MAX));
    Ok(fleet::read(&store, since, now, filter).await?)
}

fn exit_with(result: Result<(), client::Error>) -> ! {
    match result {
        Ok(()) => std::process::exit(0),
        Err(error) => {
            eprintln!("ci-creds: {error}");
            std::process::exit(error.exit_code())
        }
    }
}

async fn open_store(config: &Path) -> Result<Store> {
    let config = Config::load(config)?;
    Ok(Store::open(&config.store, config.store_password()?.as_ref()).await?)
}

async fn run_dev_issuer(dir: &Path, listen: SocketAddr) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let key_path = dir.join(KEY_FILE);
    let key = match std::fs::read_to_string(&key_path) {
        Ok(pem) => SigningKey::from_rsa_pkcs8_pem(&pem)?,
        Err(_) => {
            let key = SigningKey::generate_rs256()?;
            write_private(&key_path, key.pkcs8_pem())?;
            key
        }
    };
    let issuer = DevIssuer::start(listen, key).await?;
    std::fs::write(dir.join(URL_FILE), issuer.url())?;
    println!("{}", issuer.url());
    tracing::info!(issuer = issuer.url(), "development issuer serving");
    tokio::signal::ctrl_c().await?;
    Ok(())
}

/// `count` tokens, signed on every core: RS256 signing takes about a millisecond each.
fn dev_tokens(
    dir: &Path,
    claims: &Path,
    audience: &str,
    overrides: &[String],
    lifetime: i64,
    count: usize,
) -> Result<Vec<String>> {
    let pem = std::fs::read_to_string(dir.join(KEY_FILE))
        .context("no development issuer key; run `ci-creds dev issuer` first")?;
    let key = SigningKey::from_rsa_pkcs8_pem(&pem)?;
    let url = std::fs::read_to_string(dir.join(URL_FILE)).context("no development issuer URL")?;
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(claims)?)
        .with_context(|| format!("{} is not JSON", claims.display()))?;
    let overrides = overrides
        .iter()
        .map(|assignment| {
            let (name, value) =
                assignment.split_once('=').with_context(|| format!("--set takes NAME=VALUE, got `{assignment}`"))?;
            Ok((name, serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()))))
        })
        .collect::<Result<Vec<_>>>()?;
    let token = |n: usize| -> Result<String> {
        let mut claims = live_claims(&fixture, url.trim(), audience, lifetime);
        for (name, value) in &overrides {
            claims[*name] = with_index(value, &n.to_string());
        }
        Ok(key.sign(&claims)?)
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, count.max(1));
    let chunk = count.div_ceil(threads);
    let token = &token;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || (t * chunk..count.min((t + 1) * chunk)).map(token).collect::<Result<Vec<_>>>())
            })
            .collect();
        let mut tokens = Vec::with_capacity(count);
        for worker in workers {
            tokens.extend(worker.join().map_err(|_| anyhow::anyhow!("a signing thread panicked"))??);
        }
        Ok(tokens)
    })
}

/// `value` with `{n}` in its strings replaced by `n`: the value keeps the type VALUE was written
/// with, so `check_run_id={n}` stays a string claim.
fn with_index(value: &Value, n: &str) -> Value {
    match value {
        Value::String(text) => Value::String(text.replace("{n}", n)),
        Value::Array(items) => Value::Array(items.iter().map(|item| with_index(item, n)).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(name, field)| (name.clone(), with_index(field, n))).collect())
        }
        other => other.clone(),
    }
}

fn write_private(path: &Path, contents: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(contents.as_bytes())?;
    Ok(())
}
