//! One condition of a rule or tier match: whether it holds for a job, and if not, why, in words.

use std::borrow::Cow;

use serde_json::Value;

use super::field::{Actual, Ctx, Field};
use super::values::{Values, bool_text};

/// Why one condition does not hold, borrowing the job's own value; rendered only on refusal so
/// that the granted path allocates nothing.
pub(super) enum Failure<'j> {
    Missing,
    /// The runner is in no tier, and why its facts are unknown, when they were sought and not had.
    NoTier(Option<&'j str>),
    /// A runner fact nobody told, and why, when that is known.
    UnknownFact(Option<&'j str>),
    /// The runner's labels lack one a `runner_labels` condition lists.
    LabelsLacking(&'j [String]),
    NotAllowed(Cow<'j, str>),
    NoElementAllowed(&'j [Value]),
    NotScalar,
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
            Actual::Missing if self.field.is_source_fact() && ctx.job.ref_unknown.is_some() => {
                Failure::UnknownFact(ctx.job.ref_unknown.as_deref())
            }
            Actual::Missing if self.field == Field::RunnerTier => {
                Failure::NoTier(ctx.job.runner.unavailable.as_deref())
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
            Failure::NoTier(None) => format!("{field}: the job's runner is in no runner tier"),
            Failure::NoTier(Some(why)) => {
                format!("{field}: the job's runner is in no runner tier, its facts unknown: {why}")
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
