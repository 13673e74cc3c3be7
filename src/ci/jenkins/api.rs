//! The Jenkins REST API, read with a user's API token over HTTP Basic: `GET <job URL><number>/api/json`
//! for a build, and `GET /computer/api/json` for the agents and the builds their executors run
//! (a Pipeline build's answer names no agent). Jenkins sets no rate limits.

use std::time::Duration;

use http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::head::{self, Actions};
use crate::ci::JobLocator;
use crate::ci::api::{Head, JobApi, JobReport, Liveness, TokenHeader, check_about_job};
use crate::ci::{FactSource, Job, MAX_LABELS, RunnerFacts, bounded_fact};
use crate::net::path_segment;

pub struct RestApi;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    /// The job's items, outermost first: `["octo-org", "octo-repo", "main"]`.
    pub items: Vec<String>,
    pub build_number: u64,
    /// The build's URL as the controller writes it (its root URL, the job's path, the number):
    /// how its answers name the build.
    pub build_url: String,
}

impl Locator {
    pub fn path(&self) -> Option<String> {
        let mut path = String::new();
        for item in &self.items {
            path.push_str("/job/");
            path.push_str(&path_segment(item)?);
        }
        Some(format!("{path}/{}/api/json?tree=number,url,building,result,{}", self.build_number, head::TREE))
    }
}

#[derive(Deserialize)]
struct Answer {
    number: u64,
    building: bool,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(flatten)]
    actions: Actions,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Computer {
    display_name: String,
    #[serde(default)]
    assigned_labels: Vec<Label>,
    /// Only the agent's own executors: a Pipeline's flyweight executor, in `oneOffExecutors` of
    /// the built-in node, runs the build's script, not its steps.
    #[serde(default)]
    executors: Vec<Executor>,
}

#[derive(Deserialize)]
struct Label {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Executor {
    #[serde(default)]
    current_executable: Option<Executable>,
}

#[derive(Deserialize)]
struct Executable {
    #[serde(default)]
    number: Option<u64>,
    #[serde(default)]
    url: Option<String>,
}

#[derive(Deserialize)]
struct Computers {
    computer: Vec<Computer>,
}

impl JobApi for RestApi {
    fn credentials_path(&self) -> &'static str {
        super::credentials::PATH
    }

    fn read_credentials(&self, headers: &HeaderMap, body: &[u8]) -> Result<crate::ci::CredentialsReport, String> {
        super::credentials::read(headers, body)
    }

    fn name(&self) -> &'static str {
        "the Jenkins API"
    }

    /// Jenkins has no rate limits; this spares a busy controller.
    fn default_calls_per_minute(&self) -> u32 {
        120
    }

    fn token_header(&self) -> TokenHeader {
        TokenHeader::Basic
    }

    fn locate(&self, job: &Job) -> Result<JobLocator, &'static str> {
        // The mapping named the job by the items of `sub`, once it found `sub` to be a job's URL
        // below the issuer's controller (`claims.rs`); an item's name never holds a `/`.
        let items = job.job_name.as_deref().ok_or("no job name")?.split('/').map(str::to_owned).collect();
        let job_url = job.claims.get("sub").and_then(Value::as_str).ok_or("no `sub` claim")?;
        let build_number = job.run_id.as_deref().and_then(|n| n.parse().ok()).ok_or("no build number")?;
        Ok(JobLocator::Jenkins(Locator { items, build_number, build_url: format!("{job_url}{build_number}/") }))
    }

    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String> {
        let JobLocator::Jenkins(asked) = locator else { return Err("the job was recorded for another CI".into()) };
        let answer: Answer = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        check_about_job(&asked.build_number.to_string(), &answer.number.to_string())?;
        if let Some(url) = answer.url {
            check_about_job(&asked.build_url, &url)?;
        }
        let liveness = match (answer.building, &answer.result) {
            (true, _) => Liveness::Running,
            (false, Some(_)) => Liveness::Finished,
            (false, None) => Liveness::Unknown,
        };
        let status = answer.result.unwrap_or_else(|| if answer.building { "building" } else { "no result" }.into());
        // An unreadable head leaves the build's kind unknown, not its liveness.
        let head = Some(answer.actions.head());
        Ok(JobReport { liveness, status: bounded_fact(status), runner: None, head })
    }

    fn tells_head(&self) -> bool {
        true
    }

    fn apply_head(&self, job: &mut Job, head: Result<&Head, &str>) -> Result<(), String> {
        // The agent is the computer API's to tell (`find_runner`, asked next while the build
        // runs). A `${NODE_NAME}` template is filled from `Run.getEnvironment`, which takes the
        // node of `Computer.currentComputer()`, the thread's own: in a Pipeline that is where its
        // script runs, not the agent of the `node` block whose `withCredentials` asked for the
        // token (oidc-provider `IdTokenCredentials.token()`; not yet confirmed on a live
        // controller). A claimed agent the API does not confirm is no agent at all.
        job.runner.name.take_if(|name| name.source == FactSource::Token);
        head::apply(job, head)
    }

    fn rate_limit_pause(&self, _status: u16, _headers: &HeaderMap, _now: u64) -> Option<Duration> {
        None
    }

    /// A build deleted (log rotation, by hand) answers 404: it runs no more. A 404 also answers
    /// a user who may not read the job, so the API's user needs Job/Read on every job.
    fn not_found(&self) -> Option<Liveness> {
        Some(Liveness::Finished)
    }

    fn runners_path(&self) -> Option<&'static str> {
        Some(
            "/computer/api/json?tree=computer[displayName,assignedLabels[name],executors[currentExecutable[number,url]]]",
        )
    }

    /// The first agent one of whose executors runs the build. A Pipeline build may use several
    /// agents in turn; the one running it when asked is the one told.
    fn find_runner(&self, locator: &JobLocator, body: &[u8]) -> Result<Option<RunnerFacts>, String> {
        let JobLocator::Jenkins(asked) = locator else { return Err("the job was recorded for another CI".into()) };
        let computers: Computers = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let runs_build = |executor: &Executor| {
            executor.current_executable.as_ref().is_some_and(|run| {
                run.number == Some(asked.build_number) && run.url.as_deref() == Some(asked.build_url.as_str())
            })
        };
        let agent = computers.computer.into_iter().find(|computer| computer.executors.iter().any(runs_build));
        Ok(agent.map(|agent| {
            RunnerFacts {
                name: Some(agent.display_name),
                labels: agent.assigned_labels.into_iter().take(MAX_LABELS).map(|label| label.name).collect(),
                source: FactSource::CiApi.as_str().to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        }))
    }
}
