//! What every CI's REST API shares, as the broker reads it: whether a job runs, has finished or
//! is in a state that settles neither, the runner it ran on, and how to call it.
//! The layer-wide client (`ci_api`) does the calling: bounded GETs, budgets, caching.

use std::time::Duration;

use http::HeaderMap;
use serde::Serialize;

use super::JobLocator;
use crate::ci::{Job, RunnerFacts, bounded_fact};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Liveness {
    Running,
    Finished,
    /// Neither: queued, waiting for approval, or a status this broker does not know.
    Unknown,
}

impl Liveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobReport {
    pub liveness: Liveness,
    /// The CI's own word for the state, for logs and audit.
    pub status: String,
    pub runner: Option<RunnerFacts>,
    /// What the build runs for, from an API that tells it where the token cannot (Jenkins'
    /// `SCMRevisionAction`), or why its answer does not say; `None` from every other.
    pub head: Option<Result<Head, String>>,
}

/// The branch, tag or change request a build runs for, as its CI's API names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Head {
    /// The answer names none: not a multibranch build, so its kind is unknown.
    None,
    Branch(String),
    Tag(String),
    /// A change request (a pull request): its head's name (`PR-7`), its id where the answer
    /// tells it, and the fork it comes from.
    ChangeRequest {
        name: String,
        id: Option<String>,
        fork: Option<String>,
    },
}

/// What a CI's answer about the broker's own read credentials says (`ci-creds check`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CredentialsReport {
    /// When they expire (unix seconds), where the answer tells.
    pub expires_at: Option<i64>,
    /// Whose they are or what they may do, as the CI names it: no secret.
    pub summary: String,
    /// What the answer cannot tell, for the operator to look up by hand.
    pub untold: Option<&'static str>,
}

/// How the API takes a read token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenHeader {
    /// `Authorization: Bearer …`
    Bearer,
    /// A header of the CI's own, such as GitLab's `PRIVATE-TOKEN`.
    Named(&'static str),
    /// HTTP Basic: the configured `user` with the token as its password (Jenkins' API tokens).
    Basic,
    /// HTTP Basic with no user, the token as its password (Azure DevOps' personal access tokens).
    BasicPassword,
}

/// One CI's job API: where a job's answer lives, how to read it, how to call it.
pub trait JobApi: Sync {
    /// How errors and logs name it: "the GitHub API".
    fn name(&self) -> &'static str;
    /// Calls a minute when `max_calls_per_minute` is not set: within the CI's published limits
    /// with room to spare.
    fn default_calls_per_minute(&self) -> u32;
    /// Whether it is read with an App's installation token (`app_id`, `private_key_env`) as
    /// well as with a fixed token.
    fn takes_app(&self) -> bool {
        false
    }
    fn token_header(&self) -> TokenHeader {
        TokenHeader::Bearer
    }
    /// Headers every call sends, such as an API version.
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Where a cheap authenticated call answers about the read credentials themselves (below
    /// `api_url`), for `ci-creds check`.
    fn credentials_path(&self) -> &'static str;
    /// Reads that call's answer of 200, with its headers (GitHub tells a token's expiry in one).
    /// An error says why the credentials will not do.
    fn read_credentials(&self, headers: &HeaderMap, body: &[u8]) -> Result<CredentialsReport, String>;
    /// Where the API answers for a verified job, or why its token does not say.
    fn locate(&self, job: &Job) -> Result<JobLocator, &'static str>;
    /// Reads an answer about the job at `locator`. An answer that does not parse, or that is
    /// about another job, is an error: the job's state is unknown.
    fn read_answer(&self, locator: &JobLocator, body: &[u8]) -> Result<JobReport, String>;
    /// The pause the CI's own rate-limit headers ask for, beyond `Retry-After` (which the
    /// caller reads for every CI), with `now` in unix seconds.
    fn rate_limit_pause(&self, status: u16, headers: &HeaderMap, now: u64) -> Option<Duration>;
    /// Where the API answers for the job within the unit the job's answer describes, for a CI
    /// whose job answer is split over two (Azure DevOps: the build is the run, its timeline holds
    /// the job): asked right after a first answer of 200, with the same credentials, and both
    /// read by `read_answers`. `None` when the first answer is all there is.
    fn inner_path(&self, _locator: &JobLocator) -> Option<String> {
        None
    }
    /// Reads the two answers about the job at `locator` when `inner_path` named a second.
    fn read_answers(&self, locator: &JobLocator, first: &[u8], _inner: &[u8]) -> Result<JobReport, String> {
        self.read_answer(locator, first)
    }
    /// What the first answer says alone when `inner_path`'s could not be had (`reason`), for a
    /// job the first answer settles by itself; `None` when the job is unknown without both.
    fn read_without_inner(
        &self,
        _locator: &JobLocator,
        _first: &[u8],
        _reason: &str,
    ) -> Option<Result<JobReport, String>> {
        None
    }
    /// What an answer of 404 says of the job, for a CI whose API forgets a finished job
    /// (Jenkins deletes old builds); `None` when a 404 tells nothing, the job's state unknown.
    fn not_found(&self) -> Option<Liveness> {
        None
    }
    /// Whether `read_answer` tells what the job runs for (`JobReport::head`), so that the API is
    /// asked before the policy judges the job.
    fn tells_head(&self) -> bool {
        false
    }
    /// Sets what the job runs for from the head its answer named; an error refuses the job (the
    /// token and the CI disagree). `Err` is why the answer told no head, which leaves what the
    /// job runs for unknown. Called before the answer's runner is merged, so a CI whose token
    /// claims facts its API tells better (Jenkins' agent) drops them here.
    fn apply_head(&self, _job: &mut Job, _head: Result<&Head, &str>) -> Result<(), String> {
        Ok(())
    }
    /// Where the API lists which runner runs which job, for a CI whose job answer names no
    /// runner (Jenkins' computers); asked while the job runs.
    fn runners_path(&self) -> Option<&'static str> {
        None
    }
    /// The runner running the job at `locator`, from an answer of `runners_path`.
    fn find_runner(&self, _locator: &JobLocator, _body: &[u8]) -> Result<Option<RunnerFacts>, String> {
        Ok(None)
    }
    /// Where the API describes the runner with `runner_id` when a job answer names it without its
    /// labels; `None` when the answer is all there is.
    fn runner_labels_path(&self, _locator: &JobLocator, _runner_id: &str) -> Option<String> {
        None
    }
    /// The labels in an answer from `runner_labels_path`.
    fn read_runner_labels(&self, _body: &[u8]) -> Result<Vec<String>, String> {
        Err("this API describes no runner apart from its jobs".into())
    }
}

/// An answer about another job than the one asked about is unreadable: taken as this job's, a
/// hostile or confused answer could end it.
pub fn check_about_job(asked: &str, answered: &str) -> Result<(), String> {
    if answered != asked {
        return Err(format!("the answer is about job {}, not the job asked about", bounded_fact(answered)));
    }
    Ok(())
}

/// A number in a response header, if it is one.
pub fn header_number(headers: &HeaderMap, name: &str) -> Option<u64> {
    headers.get(name)?.to_str().ok()?.trim().parse::<u64>().ok()
}

/// From an epoch-seconds `reset` to a pause of at least a second.
pub fn until_epoch(reset: u64, now: u64) -> Duration {
    Duration::from_secs(reset.saturating_sub(now).max(1))
}

/// Response headers from name-value pairs, for the CIs' rate-limit tables.
#[cfg(test)]
pub fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    pairs.iter().map(|(name, value)| (http::HeaderName::from_static(name), value.parse().unwrap())).collect()
}
