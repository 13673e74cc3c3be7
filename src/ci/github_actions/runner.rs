//! The runner fields GitHub puts on a job, in the jobs API and in `workflow_job` webhooks alike.

use serde::Deserialize;

use crate::ci::RunnerFacts;

/// Null while the job is queued.
#[derive(Deserialize)]
pub struct GithubRunner {
    #[serde(default)]
    runner_id: Option<u64>,
    #[serde(default)]
    runner_name: Option<String>,
    #[serde(default)]
    runner_group_name: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
}

impl GithubRunner {
    /// The facts, told by `source`; none while no runner has the job.
    pub fn facts(self, source: &str) -> Option<RunnerFacts> {
        (self.runner_id.is_some() || self.runner_name.is_some()).then(|| {
            RunnerFacts {
                id: self.runner_id.map(|id| id.to_string()),
                name: self.runner_name,
                group: self.runner_group_name,
                labels: self.labels,
                source: source.to_owned(),
                ..RunnerFacts::default()
            }
            .bounded()
        })
    }
}
