//! One CI API per configured issuer: how to authenticate and where to ask. The budget every call
//! is taken from (at exchanges and by the reconciler) is kept in the store, shared by replicas.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;

use super::Error;
use super::config::{CiApiConfig, CiApisConfig, OnUnavailable};
use super::http;
use crate::ci::CiKind;
use crate::ci::{AppTokenError, AppTokens, CredentialsReport, Head, JobApi, JobLocator, JobReport, Liveness};
use crate::ci::{Job, RunnerFacts};
use crate::env_secret::secret_from_env;
use crate::identity::IssuerConfig;

enum Credentials {
    /// A fixed token, with the user it belongs to where the API takes HTTP Basic.
    Token { user: Option<String>, token: SecretString },
    /// An App's installation tokens, for a CI whose API `takes_app`.
    App(Box<AppTokens>),
}

pub struct CiApi {
    pub issuer: String,
    pub kind: CiKind,
    api: &'static dyn JobApi,
    pub check_running: bool,
    pub on_unavailable: OnUnavailable,
    /// Calls a minute, as configured or by default.
    pub calls_per_minute: u32,
    api_url: String,
    credentials: Credentials,
    http: reqwest::Client,
    /// Runners' labels by runner id, where the CI tells them apart from its job answers (Buildkite's
    /// agents): asked once per runner, kept a while.
    runner_labels: moka::future::Cache<String, Arc<Vec<String>>>,
}

/// How long a runner's labels are reused; agents rarely change tags while they live.
const RUNNER_LABELS_KEPT: Duration = Duration::from_secs(600);

/// One question's answer, and the pause the CI's rate-limit headers asked for with it.
pub struct Asked {
    /// Every error means "unknown".
    pub report: Result<JobReport, Error>,
    pub pause: Option<Duration>,
}

impl CiApi {
    /// The client of `[ci_api.<name>]` for an issuer of `kind`, its secrets read from the
    /// environment.
    pub fn new(name: &str, kind: CiKind, table: &CiApiConfig) -> Result<Self, Error> {
        build(name, kind, table)
    }

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
        self.api.name()
    }

    /// Whether its answers tell what a job runs for, which the policy must then wait for.
    pub fn tells_head(&self) -> bool {
        self.api.tells_head()
    }

    /// Sets what `job` runs for from an answer's head, or why no answer told it.
    pub fn apply_head(&self, job: &mut Job, head: Result<&Head, &str>) -> Result<(), String> {
        self.api.apply_head(job, head)
    }

    async fn ask_for(&self, locator: &JobLocator, pause: &mut Option<Duration>) -> Result<JobReport, Error> {
        let api = self.api.name();
        if locator.kind() != self.kind {
            return Err(Error::NoLocator { api, reason: "the job was recorded for another CI" });
        }
        let path =
            locator.path().ok_or(Error::NoLocator { api, reason: "the job's coordinates are not path segments" })?;
        let answer = self.get(locator, &path, pause).await?;
        let mut report = match (answer.status, self.api.not_found()) {
            (200, _) => {
                let read = match self.api.inner_path(locator) {
                    None => self.api.read_answer(locator, &answer.body),
                    Some(inner_path) => match self.get(locator, &inner_path, pause).await {
                        Ok(inner) if inner.status == 200 => self.api.read_answers(locator, &answer.body, &inner.body),
                        inner => {
                            let error =
                                inner.map_or_else(|error| error, |inner| Error::Status { api, status: inner.status });
                            match self.api.read_without_inner(locator, &answer.body, &error.to_string()) {
                                Some(read) => read,
                                None => return Err(error),
                            }
                        }
                    },
                };
                read.map_err(|reason| Error::Malformed { api, reason })?
            }
            (404, Some(liveness)) => JobReport { liveness, status: "not found".into(), runner: None, head: None },
            (status, _) => return Err(Error::Status { api, status }),
        };
        let Credentials::Token { user, token } = &self.credentials else { return Ok(report) };
        if let Some(runner) = report.runner.as_mut().filter(|runner| runner.labels.is_empty())
            && let Some(runner_id) = runner.id.clone()
            && let Some(path) = self.api.runner_labels_path(locator, &runner_id)
        {
            runner.labels = self.runner_labels(runner_id, path, user.as_deref(), token).await;
        }
        if report.runner.is_none()
            && report.liveness == Liveness::Running
            && let Some(path) = self.api.runners_path()
        {
            report.runner = self.running_on(locator, path, user.as_deref(), token).await;
        }
        Ok(report)
    }

    /// Whether the CI takes the configured read credentials, by the cheap call the CI's API
    /// names (`JobApi::credentials_path`); an App is checked by its JWT (`GET /app`). No budget
    /// is taken: `ci-creds check` makes one call per API.
    pub async fn check_credentials(&self) -> Result<CredentialsReport, Error> {
        let api = self.api.name();
        let (user, token) = match &self.credentials {
            Credentials::Token { user, token } => (user.as_deref(), token),
            Credentials::App(tokens) => {
                tokens.check().await.map_err(|reason| Error::Auth { api, reason })?;
                let summary = "App JWT accepted (GET /app)".to_owned();
                return Ok(CredentialsReport { expires_at: None, summary, untold: None });
            }
        };
        let url = format!("{}{}", self.api_url, self.api.credentials_path());
        let answer = http::get(&self.http, self.api, &url, user, token).await?;
        if answer.status != 200 {
            return Err(Error::Status { api, status: answer.status });
        }
        self.api.read_credentials(&answer.headers, &answer.body).map_err(|reason| Error::Malformed { api, reason })
    }

    /// One GET of `path` about the job at `locator`; the longest pause asked for so far is kept
    /// in `pause`.
    async fn get(&self, locator: &JobLocator, path: &str, pause: &mut Option<Duration>) -> Result<http::Answer, Error> {
        let api = self.api.name();
        let url = format!("{}{path}", self.api_url);
        let answer = match &self.credentials {
            Credentials::Token { user, token } => http::get(&self.http, self.api, &url, user.as_deref(), token).await,
            Credentials::App(tokens) => match tokens.token_for(locator).await {
                Ok(token) => http::get(&self.http, self.api, &url, None, &token.0).await,
                Err(AppTokenError::Paused { seconds }) => Err(Error::Paused { api, seconds }),
                Err(AppTokenError::Refused(reason)) => Err(Error::Auth { api, reason }),
            },
        };
        match answer {
            Ok(answer) => {
                *pause = (*pause).max(answer.pause);
                Ok(answer)
            }
            Err(Error::Paused { seconds, .. }) => {
                *pause = (*pause).max(Some(Duration::from_secs(seconds)));
                Err(Error::Paused { api, seconds })
            }
            Err(error) => Err(error),
        }
    }

    /// The runner the API's list of runners shows running the job. Unreadable means unknown:
    /// a condition on the runner is false.
    async fn running_on(
        &self,
        locator: &JobLocator,
        path: &str,
        user: Option<&str>,
        token: &SecretString,
    ) -> Option<RunnerFacts> {
        let api = self.api.name();
        let url = format!("{}{path}", self.api_url);
        let found = match http::get(&self.http, self.api, &url, user, token).await {
            Ok(answer) if answer.status == 200 => {
                self.api.find_runner(locator, &answer.body).map_err(|reason| Error::Malformed { api, reason })
            }
            Ok(answer) => Err(Error::Status { api, status: answer.status }),
            Err(error) => Err(error),
        };
        found.unwrap_or_else(|error| {
            tracing::warn!(issuer = %self.issuer, %error, "cannot tell which runner runs the job");
            None
        })
    }

    /// A runner's labels, cached per runner. Unreadable means none: the labels stay unknown, and
    /// a condition on them is false.
    async fn runner_labels(
        &self,
        runner_id: String,
        path: String,
        user: Option<&str>,
        token: &SecretString,
    ) -> Vec<String> {
        let api = self.api.name();
        let asked = self
            .runner_labels
            .try_get_with(runner_id, async {
                let url = format!("{}{path}", self.api_url);
                let answer = http::get(&self.http, self.api, &url, user, token).await?;
                match answer.status {
                    200 => self
                        .api
                        .read_runner_labels(&answer.body)
                        .map(Arc::new)
                        .map_err(|reason| Error::Malformed { api, reason }),
                    status => Err(Error::Status { api, status }),
                }
            })
            .await;
        match asked {
            Ok(labels) => labels.as_ref().clone(),
            Err(error) => {
                tracing::warn!(issuer = %self.issuer, %error, "cannot read the runner's labels");
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
    let api = kind.ci().api.ok_or_else(|| Error::Config {
        key: format!("ci_api.{name}"),
        message: format!("{} has no job API the broker asks", kind.ci().title),
    })?;
    let secret = |field: &str, env: &str| secret_from_env(env).map_err(|message| config_error(field, message));
    let timeout = Duration::from_secs(table.timeout_seconds);
    let api_url = table.api_url.trim_end_matches('/').to_owned();
    let credentials = match (&table.app_id, &table.private_key_env, &table.token_env) {
        (Some(app_id), Some(key_env), None) if api.takes_app() => {
            let pem = secret("private_key_env", key_env)?;
            let tokens = AppTokens::new(&api_url, app_id, &pem, timeout)
                .map_err(|message| config_error("private_key_env", message))?;
            Credentials::App(Box::new(tokens))
        }
        (None, None, Some(token_env)) => {
            Credentials::Token { user: table.user.clone(), token: secret("token_env", token_env)? }
        }
        _ => return Err(config_error("token_env", "give either token_env, or app_id with private_key_env".into())),
    };
    let calls_per_minute = table.max_calls_per_minute.unwrap_or_else(|| api.default_calls_per_minute());
    Ok(CiApi {
        issuer: name.to_owned(),
        kind,
        api,
        check_running: table.check_running,
        on_unavailable: table.on_unavailable(kind),
        calls_per_minute,
        api_url,
        credentials,
        http: http::client(timeout).map_err(|e| config_error("api_url", e.to_string()))?,
        runner_labels: moka::future::Cache::builder().max_capacity(10_000).time_to_live(RUNNER_LABELS_KEPT).build(),
    })
}
