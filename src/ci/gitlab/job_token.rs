//! A GitLab job's token is an `id_tokens` entry: a variable the job's configuration names, with
//! the broker's audience. `CI_CREDS_ID_TOKEN` is the name ci-creds looks for.

use crate::ci::job_token::{Env, JobToken};

const TOKEN_ENV: &str = "CI_CREDS_ID_TOKEN";

pub fn find(env: Env<'_>) -> Option<JobToken> {
    env(TOKEN_ENV).map(|_| JobToken::Env(TOKEN_ENV))
}
