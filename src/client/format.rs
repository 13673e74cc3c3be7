//! The credentials in each output format. Rendered text holds secrets, so it stays a
//! `SecretString` until it is written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

use super::answer::Answer;
use super::{Error, Format};

/// Where rendered credentials go.
pub(super) enum Destination {
    Stdout,
    File(PathBuf),
    /// Masks on stdout, variables appended to this file (the CI's own, such as `$GITHUB_ENV`, or
    /// `--output`).
    EnvFile {
        env_file: PathBuf,
    },
}

impl Destination {
    /// Decided before anything is minted, so a usage error wastes no credential.
    pub(super) fn choose(format: Format, output: Option<&Path>) -> Result<Self, Error> {
        let env_file = match format {
            Format::Step(kind) => kind.ci().step_output.as_ref().and_then(|step| Some((step.name, step.env_file?))),
            _ => None,
        };
        match (env_file, output) {
            (Some(_), Some(file)) => Ok(Self::EnvFile { env_file: file.to_owned() }),
            (Some((name, (variable, where_set))), None) => match std::env::var_os(variable) {
                Some(file) if !file.is_empty() => Ok(Self::EnvFile { env_file: file.into() }),
                _ => Err(Error::Usage(format!("--format {name} needs ${variable} ({where_set}) or --output FILE"))),
            },
            (None, Some(file)) => Ok(Self::File(file.to_owned())),
            (None, None) => Ok(Self::Stdout),
        }
    }
}

pub struct Rendered {
    /// For a CI that masks secrets (`--format github`): its mask lines, printed before any secret
    /// is written.
    pub masks: Option<SecretString>,
    pub text: SecretString,
    pub warnings: Vec<String>,
}

struct Var {
    name: String,
    value: SecretString,
    secret: bool,
}

pub(super) fn render(format: Format, answer: &Answer) -> Result<Rendered, Error> {
    let mut warnings = Vec::new();
    let mut masks = None;
    let text = match format {
        Format::Json => {
            let raw = answer.raw.expose_secret();
            let newline = if raw.ends_with('\n') { "" } else { "\n" };
            format!("{raw}{newline}")
        }
        Format::Env => lines(&variables(answer), |name, value| {
            let quoted = shlex::try_quote(value).map_err(|_| Error::Unavailable(format!("{name} holds a NUL byte")))?;
            Ok(format!("export {name}={quoted}\n"))
        })?,
        Format::Step(kind) => {
            let step = kind.ci().step_output.as_ref().ok_or_else(|| {
                Error::Usage(format!("{} has no output format of its own; use --format env", kind.ci().title))
            })?;
            let vars = variables(answer);
            if let Some(mask) = step.mask {
                let lines: String = vars.iter().filter(|v| v.secret).map(|v| mask(v.value.expose_secret())).collect();
                masks = Some(lines.into());
            }
            warnings.extend(step.warning.map(str::to_owned));
            match step.line {
                Some(line) => vars
                    .iter()
                    .map(|v| {
                        line(&v.name, v.value.expose_secret(), v.secret)
                            .map_err(|why| Error::Unavailable(format!("{} {why}", v.name)))
                    })
                    .collect::<Result<String, Error>>()?,
                None => lines(&vars, dotenv_line)?,
            }
        }
        Format::CredentialProcess => credential_process(answer)?,
    };
    Ok(Rendered { masks, text: text.into(), warnings })
}

fn lines(vars: &[Var], line: impl Fn(&str, &str) -> Result<String, Error>) -> Result<String, Error> {
    vars.iter().map(|v| line(&v.name, v.value.expose_secret())).collect()
}

/// A line break in a value would let the broker's answer define further variables.
fn dotenv_line(name: &str, value: &str) -> Result<String, Error> {
    if value.contains(['\n', '\r']) {
        return Err(Error::Unavailable(format!("{name} holds a line break and cannot be written as NAME=value")));
    }
    Ok(format!("{name}={value}\n"))
}

/// Each credential's variables; when a backend appears more than once, its names end in the
/// role (`VAULT_TOKEN_DEPLOY_PROD`) so none is overwritten. A GitHub token is `GH_TOKEN`, which
/// `gh` and most tools read (`GITHUB_TOKEN` is the job's own); with several, the first one is
/// also the plain `GH_TOKEN`, so `gh` still finds one.
fn variables(answer: &Answer) -> Vec<Var> {
    let mut per_backend: HashMap<&str, usize> = HashMap::new();
    for credential in &answer.credentials {
        *per_backend.entry(credential.backend.as_str()).or_default() += 1;
    }
    let mut vars = Vec::new();
    let mut plain_gh_token = false;
    for credential in &answer.credentials {
        let suffix = if per_backend[credential.backend.as_str()] > 1 {
            let role: String = credential
                .role
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
                .collect();
            format!("_{role}")
        } else {
            String::new()
        };
        let mut var = |name: &str, value: &str, secret: bool| {
            vars.push(Var { name: format!("{name}{suffix}"), value: value.to_owned().into(), secret });
        };
        if let Some(vault) = &credential.vault {
            var("VAULT_ADDR", &vault.address, false);
            var("VAULT_TOKEN", vault.token.expose_secret(), true);
        }
        if let Some(aws) = &credential.aws {
            // The key id is masked too, as AWS's own GitHub action does.
            var("AWS_ACCESS_KEY_ID", aws.access_key_id.expose_secret(), true);
            var("AWS_SECRET_ACCESS_KEY", aws.secret_access_key.expose_secret(), true);
            var("AWS_SESSION_TOKEN", aws.session_token.expose_secret(), true);
            if let Some(region) = &aws.region {
                var("AWS_REGION", region, false);
                var("AWS_DEFAULT_REGION", region, false);
            }
        }
        if let Some(github) = &credential.github {
            var("GH_TOKEN", github.token.expose_secret(), true);
            if !suffix.is_empty() && !plain_gh_token {
                vars.push(Var {
                    name: "GH_TOKEN".into(),
                    value: github.token.expose_secret().to_owned().into(),
                    secret: true,
                });
            }
            plain_gh_token = true;
        }
    }
    vars
}

/// The AWS CLI/SDK `credential_process` answer: exactly one STS session.
fn credential_process(answer: &Answer) -> Result<String, Error> {
    let sessions: Vec<_> = answer.credentials.iter().filter_map(|c| c.aws.as_ref().map(|aws| (c, aws))).collect();
    let [(credential, aws)] = sessions.as_slice() else {
        let roles: Vec<String> = answer.credentials.iter().map(|c| format!("{} ({})", c.role, c.backend)).collect();
        return Err(Error::Usage(format!(
            "--format credential-process needs exactly one AWS credential, the broker granted {}: {}; hint: request one AWS role, or use --format env or json",
            sessions.len(),
            roles.join(", ")
        )));
    };
    let document = json!({
        "Version": 1,
        "AccessKeyId": aws.access_key_id.expose_secret(),
        "SecretAccessKey": aws.secret_access_key.expose_secret(),
        "SessionToken": aws.session_token.expose_secret(),
        "Expiration": credential.expires_at,
    });
    Ok(format!("{document}\n"))
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
