//! Runner facts a policy author gives `policy explain` (`--runner-fact NAME=VALUE`) or a test case
//! (`runner: {environment, id, name, group, labels, queue, type, manager}`): what the CI's API or a
//! webhook would tell at an exchange, with source `given`.

use serde::Deserialize;

use crate::ci::{FactSource, Runner, Sourced};

/// The fact names, as the policy conditions name them without `runner_`.
pub const NAMES: &[&str] = &["environment", "id", "name", "group", "labels", "queue", "type", "manager"];

/// Sets one fact; `labels` takes a comma-separated list.
pub fn set(runner: &mut Runner, name: &str, value: &str) -> Result<(), String> {
    let given = |value: &str| Some(Sourced::new(value.to_owned(), FactSource::Given));
    match name.strip_prefix("runner_").unwrap_or(name) {
        "environment" => runner.environment = given(value),
        "id" => runner.id = given(value),
        "name" => runner.name = given(value),
        "group" => runner.group = given(value),
        "queue" => runner.queue = given(value),
        "type" => runner.runner_type = given(value),
        "manager" => runner.manager = given(value),
        "labels" => {
            let labels = value.split(',').map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
            runner.labels = Some(Sourced::new(labels, FactSource::Given));
        }
        other => return Err(format!("unknown runner fact `{other}`; hint: one of {}", NAMES.join(", "))),
    }
    Ok(())
}

/// `NAME=VALUE`, as `--runner-fact` takes it.
pub fn parse_arg(text: &str) -> Result<(String, String), String> {
    let (name, value) =
        text.split_once('=').ok_or_else(|| format!("`{text}` is not NAME=VALUE; hint: --runner-fact group=release"))?;
    set(&mut Runner::default(), name, value)?;
    Ok((name.to_owned(), value.to_owned()))
}

/// A test case's `runner:` mapping.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerDoc {
    #[serde(default)]
    environment: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    labels: Option<Vec<String>>,
    #[serde(default)]
    queue: Option<String>,
    #[serde(default, rename = "type")]
    runner_type: Option<String>,
    #[serde(default)]
    manager: Option<String>,
}

impl RunnerDoc {
    /// Puts these facts on `runner`, over what the claims told.
    pub fn apply(&self, runner: &mut Runner) {
        let given = |value: &Option<String>| value.clone().map(|v| Sourced::new(v, FactSource::Given));
        runner.merge(Runner {
            environment: given(&self.environment),
            id: given(&self.id),
            name: given(&self.name),
            group: given(&self.group),
            labels: self.labels.clone().map(|labels| Sourced::new(labels, FactSource::Given)),
            queue: given(&self.queue),
            runner_type: given(&self.runner_type),
            manager: given(&self.manager),
            unavailable: None,
        });
    }
}
