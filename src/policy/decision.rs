//! Judging a job against a role, and explaining a refusal in terms of the job's own values
//! only: a reason must never reveal what another rule expected.

use serde::Serialize;

use super::field::{Ctx, Field};
use super::model::Role;
use super::rule::Rule;
use crate::ci::DangerousTrigger;

/// The outcome for one request: every requested role, or why not.
#[derive(Debug)]
pub enum Decision<'a> {
    Granted(Vec<&'a Role>),
    Denied(Vec<RoleDenial>),
}

/// One refused role and each reason it was refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoleDenial {
    pub role: String,
    pub reasons: Vec<String>,
}

impl RoleDenial {
    pub(super) fn undefined(role: &str) -> Self {
        Self { role: role.to_owned(), reasons: vec!["role is not defined".to_owned()] }
    }
}

impl Role {
    pub(super) fn grants(&self, ctx: &Ctx<'_>) -> bool {
        !self.deny.iter().any(|rule| rule.holds(ctx)) && self.allow.iter().any(|rule| rule.allows(ctx))
    }

    /// The reasons `grants` is false; only called on refusal, so it may allocate freely.
    pub(super) fn explain(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let denied: Vec<String> = self
            .deny
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.holds(ctx))
            .map(|(i, rule)| {
                let fields: Vec<String> = rule.conditions.iter().map(|c| c.field.to_string()).collect();
                format!("denied by deny rule {} ({})", i + 1, fields.join(", "))
            })
            .collect();
        if !denied.is_empty() {
            return denied;
        }
        if self.allow.is_empty() {
            return vec!["role has no allow rule".to_owned()];
        }
        let numbered = self.allow.len() > 1;
        let mut reasons = Vec::new();
        for (i, rule) in self.allow.iter().enumerate() {
            let prefix = if numbered { format!("allow rule {}: ", i + 1) } else { String::new() };
            reasons.extend(rule.refusals(ctx).into_iter().map(|r| format!("{prefix}{r}")));
        }
        if reasons.is_empty() {
            // Unreachable while `grants` and `refusals` agree; kept so a refusal is never mute.
            reasons.push("no allow rule matches".to_owned());
        }
        reasons
    }
}

impl Rule {
    pub(super) fn holds(&self, ctx: &Ctx<'_>) -> bool {
        self.conditions.iter().all(|c| c.holds(ctx))
    }

    /// Like `holds`, plus the extra demand dangerous triggers make of an allow rule. Deny rules
    /// skip that demand: it may only ever narrow what is granted.
    pub(super) fn allows(&self, ctx: &Ctx<'_>) -> bool {
        self.holds(ctx) && ctx.job.dangerous_trigger.as_ref().is_none_or(|t| self.names_trigger(t))
    }

    /// Whether this rule lists the trigger literally: a glob such as `event: "glob:*"` must not
    /// let `pull_request_target` in by accident.
    fn names_trigger(&self, trigger: &DangerousTrigger) -> bool {
        self.conditions.iter().any(|c| match trigger {
            DangerousTrigger::Event(event) => c.field == Field::Event && c.values.is_named(event),
            DangerousTrigger::ForeignClaim { claim, value, .. } => {
                matches!(&c.field, Field::Claim(name) if &**name == *claim) && c.values.is_named(value)
            }
        })
    }

    /// The dangerous trigger this rule would have to name but does not, as a reason.
    pub(super) fn unnamed_trigger(&self, ctx: &Ctx<'_>) -> Option<(Field, String)> {
        let trigger = ctx.job.dangerous_trigger.as_ref().filter(|t| !self.names_trigger(t))?;
        let (field, value, what) = match trigger {
            DangerousTrigger::Event(event) => (Field::Event, event, "is a dangerous trigger"),
            DangerousTrigger::ForeignClaim { claim, value, why } => (Field::Claim((*claim).into()), value, *why),
        };
        let reason = format!("{field}: {value} {what} and the rule does not name it explicitly");
        Some((field, reason))
    }

    fn refusals(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let mut reasons: Vec<String> = Vec::new();
        let mut failed: Vec<&Field> = Vec::new();
        for condition in &self.conditions {
            if let Some(failure) = condition.failure(ctx) {
                reasons.push(condition.describe(&failure));
                failed.push(&condition.field);
            }
        }
        if let Some((field, reason)) = self.unnamed_trigger(ctx) {
            // A condition on that field which already failed says enough.
            if !failed.contains(&&field) {
                reasons.push(reason);
            }
        }
        reasons
    }
}
