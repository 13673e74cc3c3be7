//! The full account of how a role was judged, for the people who write policy: every rule, every
//! condition with the job's value and the values the rule accepts. Unlike the reasons sent to a
//! refused job, this shows what rules expect, so it is only for whoever holds the policy files.

use serde::Serialize;
use serde_json::Value;

use super::PolicySet;
use super::condition::{Condition, claim_text};
use super::field::{Actual, Ctx};
use super::rule::Rule;
use crate::ci::Job;

/// How one role was judged for a job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoleExplanation {
    pub role: String,
    pub defined: bool,
    pub granted: bool,
    pub allow: Vec<RuleExplanation>,
    pub deny: Vec<RuleExplanation>,
    /// What the role's credentials are bound to (`bind_to_address`), e.g. "the job's address
    /// block: /32 (IPv4), /128 (IPv6)"; `None` for an unbound role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_to: Option<String>,
}

/// One allow or deny rule: whether it matched, and each of its conditions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RuleExplanation {
    pub matches: bool,
    pub conditions: Vec<ConditionCheck>,
    /// Set when an allow rule's conditions hold but the job has a dangerous trigger the rule does
    /// not name literally.
    pub unnamed_trigger: Option<String>,
}

/// One condition, the job's value it read, and what it accepts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConditionCheck {
    /// The policy key: `ref`, `runner_tier`, `claims.actor` …
    pub field: String,
    /// The job's value as compared; `None` when the token lacks it.
    pub actual: Option<String>,
    /// Who told a runner fact: `token`, `ci_api`, `webhook` or `given`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    /// The accepted values as written, globs with their `glob:` prefix.
    pub accepted: Vec<String>,
    pub holds: bool,
    /// Why a fact the job lacks could not be told (a ref its token does not carry, asked of no
    /// CI API), where it is known; a rule on it cannot match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_because: Option<String>,
}

impl PolicySet {
    /// Judges `role` for `job` like [`PolicySet::decide`] does, keeping every detail.
    pub fn explain(&self, job: &Job, role: &str) -> RoleExplanation {
        let ctx = Ctx { job, tier: self.runner_tier(job) };
        let Some(found) = self.role(role) else {
            return RoleExplanation {
                role: role.to_owned(),
                defined: false,
                granted: false,
                allow: Vec::new(),
                deny: Vec::new(),
                bound_to: None,
            };
        };
        let allow = found
            .allow
            .iter()
            .map(|rule| RuleExplanation {
                matches: rule.allows(&ctx),
                conditions: checks(rule, &ctx),
                unnamed_trigger: rule.unnamed_trigger(&ctx).map(|(_, reason)| reason),
            })
            .collect();
        let deny = found
            .deny
            .iter()
            .map(|rule| RuleExplanation {
                matches: rule.holds(&ctx),
                conditions: checks(rule, &ctx),
                unnamed_trigger: None,
            })
            .collect();
        RoleExplanation {
            role: found.name.clone(),
            defined: true,
            granted: found.grants(&ctx),
            allow,
            deny,
            bound_to: found.bind.map(|binding| {
                format!("the job's address block: /{} (IPv4), /{} (IPv6)", binding.prefix_v4, binding.prefix_v6)
            }),
        }
    }
}

fn checks(rule: &Rule, ctx: &Ctx<'_>) -> Vec<ConditionCheck> {
    rule.conditions.iter().map(|c| check(c, ctx)).collect()
}

fn check(condition: &Condition, ctx: &Ctx<'_>) -> ConditionCheck {
    let mut source = None;
    let actual = match condition.field.read(ctx) {
        Actual::Missing => None,
        Actual::Text(text) => Some(text.to_owned()),
        Actual::Fact(text, told) => {
            source = Some(told.as_str());
            Some(text.to_owned())
        }
        Actual::Labels(labels, told) => {
            source = Some(told.as_str());
            Some(format!("[{}]", labels.join(", ")))
        }
        Actual::Claim(value @ (Value::Array(_) | Value::Object(_) | Value::Null)) => Some(value.to_string()),
        Actual::Claim(value) => claim_text(value).map(|t| t.into_owned()),
    };
    let unknown_because = match actual {
        None if condition.field.is_source_fact() => ctx.job.ref_unknown.clone(),
        _ => None,
    };
    ConditionCheck {
        field: condition.field.to_string(),
        actual,
        source,
        accepted: condition.values.texts(),
        holds: condition.holds(ctx),
        unknown_because,
    }
}
