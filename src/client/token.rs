//! Finding the job's OIDC token: asked from the CI for the broker's audience where the CI allows
//! it (GitHub Actions, Buildkite), so each retry gets a fresh one, else read from where the CI
//! put it (GitLab `id_tokens`, CircleCI, a file).

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;

use super::{Error, TokenArgs};
use crate::net::check_url_scheme;

const DEFAULT_TOKEN_ENV: &str = "CI_CREDS_ID_TOKEN";
const GITHUB_URL: &str = "ACTIONS_ID_TOKEN_REQUEST_URL";
const GITHUB_REQUEST_TOKEN: &str = "ACTIONS_ID_TOKEN_REQUEST_TOKEN";
const BUILDKITE_AGENT_TOKEN: &str = "BUILDKITE_AGENT_ACCESS_TOKEN";
const CIRCLECI: &str = "CIRCLE_OIDC_TOKEN_V2";
const GENERIC: &str = "CI_CREDS_TOKEN";
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

pub(super) enum TokenSource {
    File(PathBuf),
    Env(String),
    Github { url: String, request_token: SecretString },
    Buildkite,
}

#[derive(Deserialize)]
struct GithubAnswer {
    value: SecretString,
}

impl TokenSource {
    /// The first source found, in the documented order; explicit flags first.
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
        if let (Some(url), Some(request_token)) = (env(GITHUB_URL), env(GITHUB_REQUEST_TOKEN)) {
            return Ok(Self::Github { url, request_token: request_token.into() });
        }
        if env(DEFAULT_TOKEN_ENV).is_some() {
            return Ok(Self::Env(DEFAULT_TOKEN_ENV.to_owned()));
        }
        if env(BUILDKITE_AGENT_TOKEN).is_some() {
            return Ok(Self::Buildkite);
        }
        for name in [CIRCLECI, GENERIC] {
            if env(name).is_some() {
                return Ok(Self::Env(name.to_owned()));
            }
        }
        Err(Error::NoToken(format!(
            "no CI token found; looked for --token-file, ${GITHUB_URL} with ${GITHUB_REQUEST_TOKEN} \
             (GitHub Actions; the job needs `permissions: id-token: write`), ${DEFAULT_TOKEN_ENV} \
             (GitLab `id_tokens`; --token-env names another variable), ${BUILDKITE_AGENT_TOKEN} \
             (Buildkite, via `buildkite-agent oidc request-token`), ${CIRCLECI} (CircleCI) and ${GENERIC}"
        )))
    }

    /// Whether each call gives a new token, so a retry is not refused as a replay.
    pub(super) fn refreshable(&self) -> bool {
        matches!(self, Self::Github { .. } | Self::Buildkite)
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Self::File(path) => format!("--token-file {}", path.display()),
            Self::Env(name) => format!("${name}"),
            Self::Github { .. } => "GitHub Actions' token endpoint".to_owned(),
            Self::Buildkite => "buildkite-agent oidc request-token".to_owned(),
        }
    }

    pub(super) async fn fetch(&self, http: &reqwest::Client, audience: &str) -> Result<SecretString, Error> {
        let token = match self {
            Self::File(path) => std::fs::read_to_string(path)
                .map_err(|e| Error::NoToken(format!("cannot read the CI token from {}: {e}", path.display())))?,
            Self::Env(name) => {
                std::env::var(name).map_err(|_| Error::NoToken(format!("no CI token found: ${name} is not set")))?
            }
            Self::Github { url, request_token } => {
                return github(http, url, request_token, audience).await;
            }
            Self::Buildkite => buildkite(audience).await?,
        };
        let token = token.trim();
        if token.is_empty() {
            return Err(Error::NoToken(format!("{} is empty", self.describe())));
        }
        Ok(token.to_owned().into())
    }
}

async fn github(
    http: &reqwest::Client,
    url: &str,
    request_token: &SecretString,
    audience: &str,
) -> Result<SecretString, Error> {
    use secrecy::ExposeSecret;
    let failed = |why: String| Error::NoToken(format!("GitHub Actions' token endpoint: {why}"));
    let mut url = check_url_scheme(url).map_err(|e| failed(format!("${GITHUB_URL}: {e}")))?;
    url.query_pairs_mut().append_pair("audience", audience);
    let response = http
        .get(url)
        .header(reqwest::header::AUTHORIZATION, format!("bearer {}", request_token.expose_secret()))
        .timeout(FETCH_TIMEOUT)
        .send()
        .await
        .map_err(|e| failed(format!("request failed: {}", e.without_url())))?;
    if !response.status().is_success() {
        return Err(failed(format!("answered HTTP {}", response.status().as_u16())));
    }
    let answer: GithubAnswer =
        response.json().await.map_err(|_| failed("the answer is not {\"value\": \"<token>\"}".into()))?;
    Ok(answer.value)
}

async fn buildkite(audience: &str) -> Result<String, Error> {
    let output = tokio::process::Command::new("buildkite-agent")
        .args(["oidc", "request-token", "--audience", audience])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| Error::NoToken(format!("cannot run buildkite-agent: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr: String = stderr.trim().chars().take(500).collect();
        return Err(Error::NoToken(format!(
            "`buildkite-agent oidc request-token` failed ({}): {stderr}",
            output.status
        )));
    }
    String::from_utf8(output.stdout)
        .map_err(|_| Error::NoToken("buildkite-agent printed a token that is not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(args: TokenArgs, vars: &[(&str, &str)]) -> Result<String, String> {
        TokenSource::detect(&args, |name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
            .map(|s| s.describe())
            .map_err(|e| e.to_string())
    }

    fn args() -> TokenArgs {
        TokenArgs { audience: None, token_file: None, token_env: None, retry_delay: Duration::from_secs(1) }
    }

    #[test]
    fn detection_order() {
        let github = [(GITHUB_URL, "https://x/"), (GITHUB_REQUEST_TOKEN, "r")];
        let everything = [
            github[0],
            github[1],
            (DEFAULT_TOKEN_ENV, "t"),
            (BUILDKITE_AGENT_TOKEN, "b"),
            (CIRCLECI, "c"),
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
            (&[(GENERIC, " ")], "no CI token found"),
        ];
        for (vars, expected) in cases {
            let got = detect(args(), vars).unwrap_or_else(|e| e);
            assert!(got.starts_with(expected), "{vars:?}: {got}");
        }
    }
}
