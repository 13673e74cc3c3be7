//! Finding the job's OIDC token: asked from the CI for the broker's audience where the CI allows
//! it, so each retry gets a fresh one, else read from where the CI put it or a file. Where each
//! CI keeps it is the CI's own (`Ci::job_token`).

use std::path::PathBuf;

use secrecy::SecretString;

use super::{Error, TokenArgs};
use crate::ci::CiKind;
use crate::ci::NamedJob;
use crate::ci::{AskToken, JobToken};

const GENERIC: &str = "CI_CREDS_TOKEN";

pub(super) enum TokenSource {
    File(PathBuf),
    Env(String),
    /// Asked from the CI each time.
    Asked(Box<dyn AskToken>),
}

impl TokenSource {
    /// The first source found, in the documented order: explicit flags, each CI in turn, then
    /// `$CI_CREDS_TOKEN`.
    pub(super) fn detect(args: &TokenArgs, env: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(path) = &args.token_file {
            return Ok(Self::File(path.clone()));
        }
        if let Some(name) = &args.token_env {
            return match env(name) {
                Some(_) => Ok(Self::Env(name.clone())),
                None => Err(Error::NoToken(format!("no CI token found: ${name} (named by --token-env) is not set"))),
            };
        }
        if let Some(found) = CiKind::ALL.into_iter().find_map(|kind| kind.ci().job_token(&env)) {
            return Ok(match found {
                JobToken::Env(name) => Self::Env(name.to_owned()),
                JobToken::FileNamedIn(name) => Self::File(env(name).unwrap_or_default().into()),
                JobToken::Asked(ask) => Self::Asked(ask),
            });
        }
        if env(GENERIC).is_some() {
            return Ok(Self::Env(GENERIC.to_owned()));
        }
        let hints: Vec<&str> = CiKind::ALL.into_iter().map(|kind| kind.ci().job_token_hint).collect();
        Err(Error::NoToken(format!("no CI token found; looked for --token-file, {} and ${GENERIC}", hints.join(", "))))
    }

    /// Whether each call gives a new token, so a retry is not refused as a replay.
    pub(super) fn refreshable(&self) -> bool {
        matches!(self, Self::Asked(_))
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Self::File(path) => format!("--token-file {}", path.display()),
            Self::Env(name) => format!("${name}"),
            Self::Asked(ask) => ask.describe().to_owned(),
        }
    }

    pub(super) async fn fetch(&self, http: &reqwest::Client, audience: &str) -> Result<SecretString, Error> {
        let token = match self {
            Self::File(path) => std::fs::read_to_string(path)
                .map_err(|e| Error::NoToken(format!("cannot read the CI token from {}: {e}", path.display())))?,
            Self::Env(name) => {
                std::env::var(name).map_err(|_| Error::NoToken(format!("no CI token found: ${name} is not set")))?
            }
            Self::Asked(ask) => return ask.ask(http, audience).await.map_err(Error::NoToken),
        };
        let token = token.trim();
        if token.is_empty() {
            return Err(Error::NoToken(format!("{} is empty", self.describe())));
        }
        Ok(token.to_owned().into())
    }
}

/// The job within its run that the exchange names, where the CI's token names only the run and
/// the job's environment names the job (`Ci::job_in_run`).
pub(super) fn named_job(env: impl Fn(&str) -> Option<String>) -> Result<Option<NamedJob>, Error> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    CiKind::ALL
        .into_iter()
        .find_map(|kind| kind.ci().job_in_run.as_ref().and_then(|job_in_run| (job_in_run.from_env)(&env)))
        .transpose()
        .map_err(Error::NoToken)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn detect(args: TokenArgs, vars: &[(&str, &str)]) -> Result<String, String> {
        TokenSource::detect(&args, |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
            .map(|s| s.describe())
            .map_err(|e| e.to_string())
    }

    fn args() -> TokenArgs {
        TokenArgs { audience: None, token_file: None, token_env: None, retry_delay: Duration::from_secs(1) }
    }

    fn named(vars: &[(&str, &str)]) -> Result<Option<NamedJob>, Error> {
        named_job(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn a_job_is_named_where_the_ci_names_it_in_the_environment() {
        const JOB: &str = "e87e3d16-29b0-5003-7d86-82b704b96244";
        let job = named(&[("SYSTEM_JOBID", JOB), ("SYSTEM_JOBATTEMPT", "1")]).unwrap().unwrap();
        assert_eq!((job.id.as_str(), job.attempt), (JOB, 1));
        assert!(named(&[("SYSTEM_JOBID", JOB)]).unwrap().is_none());
        assert!(named(&[("SYSTEM_JOBID", " "), ("SYSTEM_JOBATTEMPT", "1")]).unwrap().is_none());
        let error = named(&[("SYSTEM_JOBID", "x"), ("SYSTEM_JOBATTEMPT", "1")]).unwrap_err();
        assert_eq!(error.exit_code(), 3, "{error}");
    }

    #[test]
    fn detection_order() {
        let github = [("ACTIONS_ID_TOKEN_REQUEST_URL", "https://x/"), ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "r")];
        let everything = [
            github[0],
            github[1],
            ("CI_CREDS_ID_TOKEN", "t"),
            ("BUILDKITE_AGENT_ACCESS_TOKEN", "b"),
            ("CIRCLE_OIDC_TOKEN_V2", "c"),
            (GENERIC, "g"),
        ];
        let with_file = TokenArgs { token_file: Some("/t".into()), ..args() };
        assert_eq!(detect(with_file, &everything).unwrap(), "--token-file /t");
        let with_env = TokenArgs { token_env: Some("GL_TOKEN".into()), ..args() };
        assert_eq!(detect(with_env.clone(), &[("GL_TOKEN", "x")]).unwrap(), "$GL_TOKEN");
        assert!(detect(with_env, &everything).unwrap_err().contains("$GL_TOKEN (named by --token-env) is not set"));
        let cases: Vec<(&[(&str, &str)], &str)> = vec![
            (&everything, "GitHub Actions' token endpoint"),
            (&everything[1..], "$CI_CREDS_ID_TOKEN"),
            (&everything[2..], "$CI_CREDS_ID_TOKEN"),
            (&everything[3..], "buildkite-agent oidc request-token"),
            (&everything[4..], "$CIRCLE_OIDC_TOKEN_V2"),
            (&everything[5..], "$CI_CREDS_TOKEN"),
            // Azure Pipelines is told by its request URI; a missing access token is said when asked.
            (&[("SYSTEM_OIDCREQUESTURI", "https://x/"), (GENERIC, "g")], "Azure Pipelines' OIDC token request"),
            (&[(GENERIC, " ")], "no CI token found"),
        ];
        for (vars, expected) in cases {
            let got = detect(args(), vars).unwrap_or_else(|e| e);
            assert!(got.starts_with(expected), "{vars:?}: {got}");
        }
    }
}
