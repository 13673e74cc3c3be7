//! What is known of the runner a job runs on, who told each fact, and how the store keeps it.

/// Which of a runner's facts tell its host apart from every other, for single-use tiers. Each
/// CI's claim mapping says which, since what a runner id names differs between CIs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunnerKey {
    /// No fact this CI gives names a host.
    #[default]
    Unknown,
    /// The runner's id.
    Id,
    /// The runner's id with its name.
    IdAndName,
    /// The runner manager: the host, where the id names a configuration many hosts share.
    Manager,
    /// The runner's name, where the CI gives it no id (a Jenkins agent).
    Name,
    /// The runner's group with its name, where a name is unique only within its group (an Azure
    /// Pipelines agent in its pool).
    GroupAndName,
}

/// Where a runner fact came from. A signed claim beats the CI's API, which beats a webhook;
/// `given` is what a policy author passed to `policy explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    Webhook,
    CiApi,
    Token,
    Given,
}

impl FactSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::CiApi => "ci_api",
            Self::Token => "token",
            Self::Given => "given",
        }
    }
}

/// One fact and who told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: FactSource,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: FactSource) -> Self {
        Self { value, source }
    }
}

/// The runner a job runs on, as far as its token, the CI's API and webhooks told. A policy
/// condition on a fact nobody told is false.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Runner {
    /// Hosted by the CI or `self-hosted`, where the token does not say: Azure Pipelines' pool,
    /// `microsoft-hosted` or `self-hosted`. A token's claim is `Job::runner_environment`.
    pub environment: Option<Sourced<String>>,
    /// GitHub's `runner_id`, GitLab's runner (a configuration many hosts may share), Buildkite's
    /// `agent_id`.
    pub id: Option<Sourced<String>>,
    pub name: Option<Sourced<String>>,
    /// GitHub's runner group; Buildkite's cluster.
    pub group: Option<Sourced<String>>,
    /// GitHub: the labels the job's `runs-on` asked for; GitLab: the job's tags; Buildkite: the
    /// agent's tags.
    pub labels: Option<Sourced<Vec<String>>>,
    /// Buildkite's queue.
    pub queue: Option<Sourced<String>>,
    /// GitLab's `instance_type`, `group_type` or `project_type`.
    pub runner_type: Option<Sourced<String>>,
    /// GitLab's runner manager (`system_id`): the host, where `id` names only a configuration.
    pub manager: Option<Sourced<String>>,
    /// Why facts the token does not carry could not be had, when they were sought.
    pub unavailable: Option<String>,
}

impl Runner {
    /// Takes each of `other`'s facts where this one has none or one from a weaker source.
    pub fn merge(&mut self, other: Runner) {
        fn take<T>(mine: &mut Option<Sourced<T>>, theirs: Option<Sourced<T>>) {
            if let Some(theirs) = theirs
                && mine.as_ref().is_none_or(|m| m.source < theirs.source)
            {
                *mine = Some(theirs);
            }
        }
        take(&mut self.environment, other.environment);
        take(&mut self.id, other.id);
        take(&mut self.name, other.name);
        take(&mut self.group, other.group);
        take(&mut self.labels, other.labels);
        take(&mut self.queue, other.queue);
        take(&mut self.runner_type, other.runner_type);
        take(&mut self.manager, other.manager);
    }
}

/// The runner a job ran on, as one source told it: how the store keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunnerFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// Absent from what brokers before it stored, and from every CI's facts but Azure Pipelines'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// `ci_api`, or the webhook it came from (`webhook:github`). Kept last: the store tells the
    /// API's facts by how their JSON ends.
    pub source: String,
}

/// Labels, names and ids are bounded as they are kept: a hostile answer cannot grow a record.
pub const MAX_FACT_CHARS: usize = 256;
pub const MAX_LABELS: usize = 64;

/// A fact cut to size, control characters dropped: a hostile answer or delivery cannot grow a
/// record or forge a log line.
pub fn bounded_fact(value: impl ToString) -> String {
    value.to_string().chars().filter(|c| !c.is_control()).take(MAX_FACT_CHARS).collect()
}

impl RunnerFacts {
    /// Every fact bounded (`bounded_fact`), and at most `MAX_LABELS` labels.
    pub fn bounded(self) -> Self {
        Self {
            id: self.id.map(bounded_fact),
            name: self.name.map(bounded_fact),
            group: self.group.map(bounded_fact),
            labels: self.labels.into_iter().take(MAX_LABELS).map(bounded_fact).collect(),
            queue: self.queue.map(bounded_fact),
            runner_type: self.runner_type.map(bounded_fact),
            manager: self.manager.map(bounded_fact),
            environment: self.environment.map(bounded_fact),
            source: bounded_fact(self.source),
        }
    }

    /// The facts as a job's runner, each tagged with this report's source.
    pub fn to_runner(&self) -> Runner {
        let source = if self.source == FactSource::CiApi.as_str() { FactSource::CiApi } else { FactSource::Webhook };
        let told = |value: &Option<String>| value.clone().map(|v| Sourced::new(v, source));
        Runner {
            environment: told(&self.environment),
            id: told(&self.id),
            name: told(&self.name),
            group: told(&self.group),
            labels: (!self.labels.is_empty()).then(|| Sourced::new(self.labels.clone(), source)),
            queue: told(&self.queue),
            runner_type: told(&self.runner_type),
            manager: told(&self.manager),
            unavailable: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_facts_keep_the_environment_and_read_without_it() {
        let facts = RunnerFacts {
            group: Some("linux-pool".into()),
            environment: Some("self-hosted".into()),
            source: "ci_api".into(),
            ..RunnerFacts::default()
        };
        let stored = serde_json::to_string(&facts).unwrap();
        assert_eq!(stored, r#"{"group":"linux-pool","environment":"self-hosted","source":"ci_api"}"#);
        let runner = serde_json::from_str::<RunnerFacts>(&stored).unwrap().to_runner();
        assert_eq!(runner.environment, Some(Sourced::new("self-hosted".into(), FactSource::CiApi)));
        let before = serde_json::from_str::<RunnerFacts>(r#"{"group":"linux-pool","source":"ci_api"}"#).unwrap();
        assert_eq!(before.environment, None);
    }
}
