//! How a job finds its own OIDC token inside its CI, for `ci-creds get`.

use std::future::Future;
use std::pin::Pin;

use secrecy::SecretString;

/// The environment a job runs in, one variable at a time; blank values count as unset.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where a job of this CI finds its token.
pub enum JobToken {
    /// In this environment variable.
    Env(&'static str),
    /// In the file whose path this environment variable holds.
    FileNamedIn(&'static str),
    /// Asked from the CI for the broker's audience, a fresh token each time, so a retry is not
    /// refused as a replay.
    Asked(Box<dyn AskToken>),
}

pub type Asking<'a> = Pin<Box<dyn Future<Output = Result<SecretString, String>> + Send + 'a>>;

/// A CI's way of issuing a job a token on request.
pub trait AskToken: Send + Sync {
    /// What `ci-creds get` says it used: "GitHub Actions' token endpoint".
    fn describe(&self) -> &'static str;
    /// The token; an error says why, without any secret.
    fn ask<'a>(&'a self, http: &'a reqwest::Client, audience: &'a str) -> Asking<'a>;
}
