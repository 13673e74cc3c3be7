//! One condition of a rule or tier match: which job field it reads, the values it accepts, and
//! how a job's value is compared with them.

use std::borrow::Cow;
use std::fmt;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use crate::job::{FactSource, Job, Sourced};

/// Marks a value as an anchored glob instead of an exact string.
const GLOB_PREFIX: &str = "glob:";

/// The job field a condition reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Issuer,
    Repository,
    RepositoryId,
    Owner,
    OwnerId,
    Ref,
    RefType,
    RefProtected,
    Environment,
    EnvironmentProtected,
    Event,
    WorkflowRef,
    JobWorkflowRef,
    RunnerEnvironment,
    RunnerId,
    RunnerName,
    RunnerGroup,
    RunnerLabels,
    RunnerQueue,
    RunnerType,
    RunnerManager,
    RunnerTier,
    Claim(Box<str>),
}

impl Field {
    /// The policy keys of the named fields, in the order the docs list them.
    pub(super) const KEYS: &'static [&'static str] = &[
        "issuer",
        "repository",
        "repository_id",
        "owner",
        "owner_id",
        "ref",
        "ref_type",
        "ref_protected",
        "environment",
        "environment_protected",
        "event",
        "workflow_ref",
        "job_workflow_ref",
        "runner_environment",
        "runner_id",
        "runner_name",
        "runner_group",
        "runner_labels",
        "runner_queue",
        "runner_type",
        "runner_manager",
        "runner_tier",
        "claims",
    ];

    pub(super) fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "issuer" => Self::Issuer,
            "repository" => Self::Repository,
            "repository_id" => Self::RepositoryId,
            "owner" => Self::Owner,
            "owner_id" => Self::OwnerId,
            "ref" => Self::Ref,
            "ref_type" => Self::RefType,
            "ref_protected" => Self::RefProtected,
            "environment" => Self::Environment,
            "environment_protected" => Self::EnvironmentProtected,
            "event" => Self::Event,
            "workflow_ref" => Self::WorkflowRef,
            "job_workflow_ref" => Self::JobWorkflowRef,
            "runner_environment" => Self::RunnerEnvironment,
            "runner_id" => Self::RunnerId,
            "runner_name" => Self::RunnerName,
            "runner_group" => Self::RunnerGroup,
            "runner_labels" => Self::RunnerLabels,
            "runner_queue" => Self::RunnerQueue,
            "runner_type" => Self::RunnerType,
            "runner_manager" => Self::RunnerManager,
            "runner_tier" => Self::RunnerTier,
            _ => return None,
        })
    }

    fn key(&self) -> &str {
        match self {
            Self::Issuer => "issuer",
            Self::Repository => "repository",
            Self::RepositoryId => "repository_id",
            Self::Owner => "owner",
            Self::OwnerId => "owner_id",
            Self::Ref => "ref",
            Self::RefType => "ref_type",
            Self::RefProtected => "ref_protected",
            Self::Environment => "environment",
            Self::EnvironmentProtected => "environment_protected",
            Self::Event => "event",
            Self::WorkflowRef => "workflow_ref",
            Self::JobWorkflowRef => "job_workflow_ref",
            Self::RunnerEnvironment => "runner_environment",
            Self::RunnerId => "runner_id",
            Self::RunnerName => "runner_name",
            Self::RunnerGroup => "runner_group",
            Self::RunnerLabels => "runner_labels",
            Self::RunnerQueue => "runner_queue",
            Self::RunnerType => "runner_type",
            Self::RunnerManager => "runner_manager",
            Self::RunnerTier => "runner_tier",
            Self::Claim(name) => name,
        }
    }

    /// A fact about the runner that the token may not carry, so that the CI's API or a webhook
    /// may have to tell it.
    pub(super) fn is_runner_fact(&self) -> bool {
        matches!(
            self,
            Self::RunnerId
                | Self::RunnerName
                | Self::RunnerGroup
                | Self::RunnerLabels
                | Self::RunnerQueue
                | Self::RunnerType
                | Self::RunnerManager
        )
    }

    pub(super) fn read<'j>(&self, ctx: &Ctx<'j>) -> Actual<'j> {
        let job = ctx.job;
        let text = |v: &'j Option<String>| v.as_deref().map_or(Actual::Missing, Actual::Text);
        let fact = |v: &'j Option<Sourced<String>>| {
            v.as_ref().map_or(Actual::Missing, |fact| Actual::Fact(&fact.value, fact.source))
        };
        let flag = |v: Option<bool>| v.map_or(Actual::Missing, |b| Actual::Text(bool_text(b)));
        match self {
            Self::Issuer => Actual::Text(&job.issuer),
            Self::Repository => Actual::Text(&job.repository),
            Self::RepositoryId => text(&job.repository_id),
            Self::Owner => text(&job.owner),
            Self::OwnerId => text(&job.owner_id),
            Self::Ref => text(&job.git_ref),
            Self::RefType => text(&job.ref_type),
            Self::RefProtected => flag(job.ref_protected),
            Self::Environment => text(&job.environment),
            Self::EnvironmentProtected => flag(job.environment_protected),
            Self::Event => text(&job.event),
            Self::WorkflowRef => text(&job.workflow_ref),
            Self::JobWorkflowRef => text(&job.job_workflow_ref),
            Self::RunnerEnvironment => text(&job.runner_environment),
            Self::RunnerId => fact(&job.runner.id),
            Self::RunnerName => fact(&job.runner.name),
            Self::RunnerGroup => fact(&job.runner.group),
            Self::RunnerLabels => job
                .runner
                .labels
                .as_ref()
                .map_or(Actual::Missing, |labels| Actual::Labels(&labels.value, labels.source)),
            Self::RunnerQueue => fact(&job.runner.queue),
            Self::RunnerType => fact(&job.runner.runner_type),
            Self::RunnerManager => fact(&job.runner.manager),
            Self::RunnerTier => ctx.tier.map_or(Actual::Missing, Actual::Text),
            Self::Claim(name) => job.claims.get(&**name).map_or(Actual::Missing, Actual::Claim),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Claim(name) => write!(f, "claims.{name}"),
            other => f.write_str(other.key()),
        }
    }
}

fn bool_text(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// What a job is judged with: the job and the runner tier computed for it once per decision.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'j> {
    pub(super) job: &'j Job,
    pub(super) tier: Option<&'j str>,
}

pub(super) enum Actual<'j> {
    Missing,
    Text(&'j str),
    Claim(&'j Value),
    /// A runner fact, with who told it.
    Fact(&'j str, FactSource),
    Labels(&'j [String], FactSource),
}

/// Why one condition does not hold, borrowing the job's own value; rendered only on refusal so
/// that the granted path allocates nothing.
pub(super) enum Failure<'j> {
    Missing,
    /// A runner fact nobody told, and why, when that is known.
    UnknownFact(Option<&'j str>),
    /// The runner's labels lack one a `runner_labels` condition lists.
    LabelsLacking(&'j [String]),
    NotAllowed(Cow<'j, str>),
    NoElementAllowed(&'j [Value]),
    NotScalar,
}

/// The values a condition accepts: exact strings, and anchored globs compiled at load time.
#[derive(Clone, Debug)]
pub(super) struct Values {
    exact: Vec<Box<str>>,
    /// The glob patterns as written (without `glob:`), for explanations and lints.
    patterns: Vec<Box<str>>,
    globs: Option<GlobSet>,
}

impl Values {
    pub(super) fn matches(&self, actual: &str) -> bool {
        self.is_named(actual) || self.globs.as_ref().is_some_and(|g| g.is_match(actual))
    }

    /// Whether every listed value is one of `labels`, ignoring case as GitHub does.
    fn all_among(&self, labels: &[String]) -> bool {
        self.exact.iter().all(|wanted| labels.iter().any(|label| label.eq_ignore_ascii_case(wanted)))
    }

    /// Whether any value is a glob.
    pub(super) fn has_globs(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// Whether `actual` is listed literally, as dangerous triggers require.
    pub(super) fn is_named(&self, actual: &str) -> bool {
        self.exact.iter().any(|e| **e == *actual)
    }

    /// Whether a glob (not only a literal value) would accept `probe`.
    pub(super) fn glob_matches(&self, probe: &str) -> bool {
        self.globs.as_ref().is_some_and(|g| g.is_match(probe))
    }

    /// Every accepted value as written in the policy, globs with their `glob:` prefix.
    pub(super) fn texts(&self) -> Vec<String> {
        self.exact
            .iter()
            .map(|e| e.to_string())
            .chain(self.patterns.iter().map(|p| format!("{GLOB_PREFIX}{p}")))
            .collect()
    }

    fn build(texts: Vec<String>) -> Result<Self, String> {
        if texts.is_empty() {
            return Err("an empty list matches nothing; hint: list at least one value, or remove the condition".into());
        }
        let mut exact = Vec::new();
        let mut patterns = Vec::new();
        let mut globs = GlobSetBuilder::new();
        for text in texts {
            let Some(pattern) = text.strip_prefix(GLOB_PREFIX) else {
                exact.push(text.into_boxed_str());
                continue;
            };
            if pattern.is_empty() {
                return Err("`glob:` needs a pattern after it, e.g. `glob:refs/heads/release/*`".into());
            }
            // `*` must never cross `/`: otherwise `refs/heads/*` would also admit nested refs.
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("malformed glob: {e}; hint: `*` matches within one path segment, `**` across segments, `[...]` must be closed"))?;
            globs.add(glob);
            patterns.push(pattern.into());
        }
        let globs =
            if !patterns.is_empty() { Some(globs.build().map_err(|e| format!("malformed glob: {e}"))?) } else { None };
        Ok(Self { exact, patterns, globs })
    }
}

impl<'de> Deserialize<'de> for Values {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValuesVisitor)
    }
}

struct ValuesVisitor;

impl<'de> Visitor<'de> for ValuesVisitor {
    type Value = Values;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, integer or boolean, or a non-empty list of them")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Values, E> {
        Values::build(vec![v.to_owned()]).map_err(E::custom)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Values, E> {
        Values::build(vec![bool_text(v).to_owned()]).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Values, E> {
        Values::build(vec![v.to_string()]).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Values, E> {
        Values::build(vec![v.to_string()]).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Values, E> {
        Err(E::custom(FLOAT_HINT))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Values, E> {
        Err(E::custom(EMPTY_HINT))
    }

    fn visit_none<E: de::Error>(self) -> Result<Values, E> {
        Err(E::custom(EMPTY_HINT))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Values, A::Error> {
        let mut texts = Vec::new();
        while let Some(Scalar(text)) = seq.next_element()? {
            texts.push(text);
        }
        Values::build(texts).map_err(de::Error::custom)
    }
}

const FLOAT_HINT: &str = "a decimal number cannot be compared exactly; hint: quote it as a string";
// A bare `ref:` would otherwise vanish and silently widen the rule.
const EMPTY_HINT: &str = "the condition has no value; hint: give a value, or remove the key";

/// One list element: a scalar in its text form.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, integer or boolean (lists may not nest)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar(v.to_owned()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar(bool_text(v).to_owned()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar, E> {
        Err(E::custom(FLOAT_HINT))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Err(E::custom("a list element has no value; hint: remove it or give a value"))
    }
}

/// One condition of a rule or a tier match.
#[derive(Clone, Debug)]
pub(super) struct Condition {
    pub(super) field: Field,
    pub(super) values: Values,
}

impl Condition {
    pub(super) fn holds(&self, ctx: &Ctx<'_>) -> bool {
        match self.field.read(ctx) {
            Actual::Missing => false,
            Actual::Text(text) | Actual::Fact(text, _) => self.values.matches(text),
            Actual::Labels(labels, _) => self.values.all_among(labels),
            Actual::Claim(value) => match value {
                Value::Array(items) => items.iter().any(|item| self.claim_scalar_matches(item)),
                scalar => self.claim_scalar_matches(scalar),
            },
        }
    }

    fn claim_scalar_matches(&self, value: &Value) -> bool {
        claim_text(value).is_some_and(|text| self.values.matches(&text))
    }

    /// Why the condition does not hold for this job; `None` when it holds.
    pub(super) fn failure<'j>(&self, ctx: &Ctx<'j>) -> Option<Failure<'j>> {
        if self.holds(ctx) {
            return None;
        }
        Some(match self.field.read(ctx) {
            Actual::Missing if self.field.is_runner_fact() => {
                Failure::UnknownFact(ctx.job.runner.unavailable.as_deref())
            }
            Actual::Missing => Failure::Missing,
            Actual::Text(text) | Actual::Fact(text, _) => Failure::NotAllowed(Cow::Borrowed(text)),
            Actual::Labels(labels, _) => Failure::LabelsLacking(labels),
            Actual::Claim(Value::Array(items)) => Failure::NoElementAllowed(items),
            Actual::Claim(value) => claim_text(value).map_or(Failure::NotScalar, Failure::NotAllowed),
        })
    }

    pub(super) fn describe(&self, failure: &Failure<'_>) -> String {
        let field = &self.field;
        match failure {
            Failure::Missing if self.field == Field::RunnerTier => {
                format!("{field}: the job's runner is in no runner tier")
            }
            Failure::Missing => format!("{field}: the token has no such claim"),
            Failure::UnknownFact(why) => {
                let why = why.unwrap_or("neither the token, the CI's API nor a webhook told it");
                format!("{field} unknown: {why}")
            }
            Failure::LabelsLacking(labels) => {
                format!("{field}: [{}] lacks a label the rule requires", labels.join(", "))
            }
            Failure::NotAllowed(text) => {
                format!("{field}: {text} is not one of the allowed values")
            }
            Failure::NoElementAllowed(items) => {
                let texts: Vec<String> = items.iter().filter_map(|v| claim_text(v).map(Cow::into_owned)).collect();
                format!("{field}: none of [{}] is one of the allowed values", texts.join(", "))
            }
            Failure::NotScalar => {
                format!("{field}: the token's value is not a string, number, boolean or list of them")
            }
        }
    }
}

/// A raw claim's text form; objects and null have none, so they never match.
pub(super) fn claim_text(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Borrowed(bool_text(*b))),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}
