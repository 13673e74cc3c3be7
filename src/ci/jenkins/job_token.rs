//! A Jenkins build gets its token from a `withCredentials` binding of the plugin's credential:
//! `string(…, variable: 'CI_CREDS_ID_TOKEN')`, or the file kind,
//! `file(…, variable: 'CI_CREDS_ID_TOKEN_FILE')`. Each binding mints a token; two minted within
//! the same second are the same token (no `jti`, the same `iat`).

use crate::ci::job_token::{Env, JobToken};

const TOKEN_ENV: &str = "CI_CREDS_ID_TOKEN";
const TOKEN_FILE_ENV: &str = "CI_CREDS_ID_TOKEN_FILE";
/// Set in every build's environment.
const JENKINS_ENV: &str = "JENKINS_URL";

pub fn find(env: Env<'_>) -> Option<JobToken> {
    env(JENKINS_ENV)?;
    if env(TOKEN_ENV).is_some() {
        return Some(JobToken::Env(TOKEN_ENV));
    }
    env(TOKEN_FILE_ENV).map(|_| JobToken::FileNamedIn(TOKEN_FILE_ENV))
}
