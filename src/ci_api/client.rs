//! One CI API per configured issuer: how to authenticate and where to ask. The budget every call
//! is taken from (at exchanges and by the reconciler) is kept in the store, shared by replicas.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;

use super::config::{CiApiConfig, CiApisConfig, OnUnavailable};
use super::github::AppTokens;
use super::http::{self, Auth};
use super::status::api_name;
use super::{Error, JobLocator, JobReport, parse_agent_tags, parse_answer};
use crate::backends::github::app::GithubApp;
use crate::identity::IssuerConfig;
use crate::job::CiKind;

enum Credentials {
    Token(SecretString),
    GithubApp(Box<AppTokens>),
}

pub struct CiApi {
    pub issuer: String,
    pub kind: CiKind,
    pub check_running: bool,
    pub on_unavailable: OnUnavailable,
    /// Calls a minute, as configured or by default.
    pub calls_per_minute: u32,
    api_url: String,
    credentials: Credentials,
    http: reqwest::Client,
    /// Buildkite agents' tags by agent id: asked once per agent, kept a while.
    agent_tags: moka::future::Cache<String, Arc<Vec<String>>>,
}

/// How long a Buildkite agent's tags are reused; agents rarely change tags while they live.
const AGENT_TAGS_KEPT: Duration = Duration::from_secs(600);

/// Within each CI's published limits with room to spare: GitHub allows an App installation
/// 5,000 requests an hour (83 a minute), GitLab.com 2,000 a minute per user, Buildkite 200 a
/// minute per organization.
pub fn default_calls_per_minute(kind: CiKind) -> u32 {
    match kind {
        CiKind::Github => 60,
        CiKind::Gitlab => 600,
        CiKind::Buildkite => 100,
        CiKind::Circleci => 0,
    }
}

/// One question's answer, and the pause the CI's rate-limit headers asked for with it.
pub struct Asked {
    /// Every error means "unknown".
    pub report: Result<JobReport, Error>,
    pub pause: Option<Duration>,
}

impl CiApi {
    /// Asks about one job; the call must have been taken from the issuer's budget.
    pub async fn ask(&self, locator: &JobLocator) -> Asked {
        let mut pause = None;
        let report = self.ask_for(locator, &mut pause).await;
        if let Some(pause) = pause {
            tracing::warn!(issuer = %self.issuer, seconds = pause.as_secs(), "CI API rate limit reached; pausing calls");
        }
        Asked { report, pause }
    }

    pub fn api_name(&self) -> &'static str {
        api_name(self.kind)
    }

    async fn ask_for(&self, locator: &JobLocator, pause: &mut Option<Duration>) -> Result<JobReport, Error> {
        let api = api_name(self.kind);
        if locator.kind() != self.kind {
            return Err(Error::NoLocator { api, reason: "the job was recorded for another CI" });
        }
        let url = format!("{}{}", self.api_url, locator.path());
        let answer = match &self.credentials {
            Credentials::Token(token) => {
                let auth = if self.kind == CiKind::Gitlab { Auth::PrivateToken(token) } else { Auth::Bearer(token) };
                http::get(&self.http, self.kind, &url, auth).await
            }
            Credentials::GithubApp(tokens) => {
                let JobLocator::Github { repository, .. } = locator else {
                    return Err(Error::NoLocator { api, reason: "the job was recorded for another CI" });
                };
                match tokens.token_for(repository).await {
                    Ok(token) => http::get(&self.http, self.kind, &url, Auth::Bearer(&token.0)).await,
                    Err(error) => Err(error),
                }
            }
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(Error::Paused { seconds, .. }) => {
                *pause = Some(Duration::from_secs(seconds));
                return Err(Error::Paused { api, seconds });
            }
            Err(error) => return Err(error),
        };
        *pause = answer.pause;
        let mut report = match answer.status {
            200 => parse_answer(self.kind, &answer.body)?,
            status => return Err(Error::Status { api, status }),
        };
        if let Some(runner) = report.runner.as_mut().filter(|runner| runner.labels.is_empty())
            && let Some(agent_id) = runner.id.clone()
            && let Some(path) = locator.agent_path(&agent_id)
            && let Credentials::Token(token) = &self.credentials
        {
            runner.labels = self.agent_tags(agent_id, path, token).await;
        }
        Ok(report)
    }

    /// A Buildkite agent's tags, cached per agent. Unreadable means none: the labels stay
    /// unknown, and a condition on them is false.
    async fn agent_tags(&self, agent_id: String, path: String, token: &SecretString) -> Vec<String> {
        let asked = self
            .agent_tags
            .try_get_with(agent_id, async {
                let url = format!("{}{path}", self.api_url);
                let answer = http::get(&self.http, self.kind, &url, Auth::Bearer(token)).await?;
                match answer.status {
                    200 => parse_agent_tags(&answer.body).map(Arc::new),
                    status => Err(Error::Status { api: api_name(self.kind), status }),
                }
            })
            .await;
        match asked {
            Ok(tags) => tags.as_ref().clone(),
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, %error, "cannot read the Buildkite agent's tags");
                Vec::new()
            }
        }
    }
}

/// Every configured CI API, by issuer name.
#[derive(Default)]
pub struct CiApis {
    by_issuer: BTreeMap<String, Arc<CiApi>>,
}

impl CiApis {
    /// Builds each `[ci_api.<issuer>]` client, reading its secrets from the environment.
    /// The tables were validated with the config; errors here name the env var's key.
    pub fn from_config(config: &CiApisConfig, issuers: &[IssuerConfig]) -> Result<Self, Error> {
        let mut by_issuer = BTreeMap::new();
        for (name, table) in config {
            let kind =
                issuers.iter().find(|issuer| &issuer.name == name).map(|issuer| issuer.kind).ok_or_else(|| {
                    Error::Config { key: format!("ci_api.{name}"), message: format!("no issuer is named `{name}`") }
                })?;
            by_issuer.insert(name.clone(), Arc::new(build(name, kind, table)?));
        }
        Ok(Self { by_issuer })
    }

    pub fn get(&self, issuer: &str) -> Option<&Arc<CiApi>> {
        self.by_issuer.get(issuer)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<CiApi>> {
        self.by_issuer.values()
    }

    pub fn is_empty(&self) -> bool {
        self.by_issuer.is_empty()
    }
}

fn build(name: &str, kind: CiKind, table: &CiApiConfig) -> Result<CiApi, Error> {
    let key = |field: &str| format!("ci_api.{name}.{field}");
    let config_error = |field: &str, message: String| Error::Config { key: key(field), message };
    let secret = |field: &str, env: &str| match std::env::var(env) {
        Ok(value) if !value.trim().is_empty() => Ok(SecretString::from(value.trim().to_owned())),
        _ => Err(config_error(field, format!("the environment variable {env} is not set"))),
    };
    let timeout = Duration::from_secs(table.timeout_seconds);
    let api_url = table.api_url.trim_end_matches('/').to_owned();
    let credentials = match (&table.app_id, &table.private_key_env, &table.token_env) {
        (Some(app_id), Some(key_env), None) => {
            let pem = secret("private_key_env", key_env)?;
            let app = GithubApp::new(&api_url, app_id, &pem, timeout)
                .map_err(|e| config_error("private_key_env", e.to_string()))?;
            Credentials::GithubApp(Box::new(AppTokens::new(app)))
        }
        (None, None, Some(token_env)) => Credentials::Token(secret("token_env", token_env)?),
        _ => return Err(config_error("token_env", "give either token_env, or app_id with private_key_env".into())),
    };
    let calls_per_minute = table.max_calls_per_minute.unwrap_or_else(|| default_calls_per_minute(kind));
    Ok(CiApi {
        issuer: name.to_owned(),
        kind,
        check_running: table.check_running,
        on_unavailable: table.on_unavailable,
        calls_per_minute,
        api_url,
        credentials,
        http: http::client(timeout).map_err(|e| config_error("api_url", e.to_string()))?,
        agent_tags: moka::future::Cache::builder().max_capacity(10_000).time_to_live(AGENT_TAGS_KEPT).build(),
    })
}
