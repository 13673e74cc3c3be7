//! What runs inside a CI job: `ci-creds get` fetches the job's OIDC token, exchanges it at the
//! broker and writes the credentials in the shape the pipeline needs; `ci-creds revoke` ends the
//! job. Secrets go only to stdout or the named file, never into a diagnostic.

mod answer;
mod args;
mod broker;
mod error;
mod format;
mod output;
mod token;

pub use args::{Format, GetArgs, RevokeArgs, TokenArgs};
pub use error::{Denial, EXIT_CODES_HELP, Error, Refusal};
pub use format::Rendered;

use answer::Answer;
use broker::{BrokerClient, Retry};
use format::{Destination, render};
use secrecy::SecretString;
use token::TokenSource;

/// `ci-creds get`.
pub async fn get(args: GetArgs) -> Result<(), Error> {
    let destination = Destination::choose(args.format, args.output.as_deref())?;
    let client = BrokerClient::new(&args.broker)?;
    let source = TokenSource::detect(&args.token, |name| std::env::var(name).ok())?;
    let job = token::named_job(|name| std::env::var(name).ok())?;
    let audience = args.token.audience_or(&args.broker);
    let retry = Retry::new(args.token.retry_delay);
    let answer = client.exchange(&source, &audience, &args.roles, args.ttl, job.as_ref(), retry).await?;
    let rendered = render(args.format, &answer)?;
    for warning in &rendered.warnings {
        eprintln!("ci-creds: warning: {warning}");
    }
    output::write(&destination, &rendered)
}

/// What `get` makes of the body of the broker's successful answer: the credentials parsed and
/// rendered in `format`, nothing written yet.
pub fn render_answer(format: Format, body: SecretString) -> Result<Rendered, Error> {
    render(format, &Answer::parse(body)?)
}

/// `ci-creds revoke`.
pub async fn revoke(args: RevokeArgs) -> Result<(), Error> {
    let client = BrokerClient::new(&args.broker)?;
    let source = TokenSource::detect(&args.token, |name| std::env::var(name).ok())?;
    let job = token::named_job(|name| std::env::var(name).ok())?;
    let audience = args.token.audience_or(&args.broker);
    let retry = Retry::new(args.token.retry_delay);
    let revoked = client.self_revoke(&source, &audience, job.as_ref(), retry).await?;
    println!("revoked {} credential(s) of job {}", revoked.revoked, revoked.job_id);
    Ok(())
}
