//! What a job may get: policy files parsed into roles and runner tiers, and the decision for a
//! job's request. Pure: the caller reads the files; nothing here does I/O.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::ci::Job;

mod aws;
mod aws_binding;
mod binding;
mod checked_section;
mod condition;
mod decision;
mod error;
mod explain;
mod field;
mod github_app;
mod lint;
mod lint_refs;
mod model;
mod rule;
mod schema;
mod tiers;
mod values;
mod vault;

#[cfg(test)]
mod tests;

pub use aws::{AWS_MAX_SESSION, AWS_MIN_SESSION, AWS_RESERVED_TAG_PREFIX, AwsScope};
pub use aws_binding::bound_session_policy;
pub use binding::AddressBinding;
pub use decision::{Decision, RoleDenial};
pub use error::Error;
pub use explain::{ConditionCheck, RoleExplanation, RuleExplanation};
pub use github_app::{GITHUB_TOKEN_LIFETIME, GithubAppScope, Repositories};
pub use lint::Warning;
pub use model::{BackendKind, Role};
pub use rule::Rule;
pub use schema::json_schema;
pub use vault::VaultScope;

use condition::Condition;
use field::{Actual, Ctx, Field};
use model::FileDoc;
use tiers::RunnerTier;

/// The runner tier a job is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tier<'p> {
    pub name: &'p str,
    pub single_use: bool,
}

/// One policy file's path (for error messages) and text.
#[derive(Clone, Copy, Debug)]
pub struct PolicyFile<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

/// Every role and runner tier of a set of policy files, checked and compiled once.
#[derive(Clone, Debug, Default)]
pub struct PolicySet {
    roles: Vec<Role>,
    by_name: HashMap<String, usize>,
    tiers: Vec<RunnerTier>,
}

impl PolicySet {
    /// Parses every file; roles and tiers from all files are combined (files in the order given).
    pub fn parse(files: &[PolicyFile<'_>]) -> Result<Self, Error> {
        let mut set = Self::default();
        // Where each name came from, to name both files when one is defined twice.
        let mut role_paths: Vec<&str> = Vec::new();
        let mut tier_paths: HashMap<String, &str> = HashMap::new();
        for file in files {
            let doc: FileDoc = serde_yaml_ng::from_str(file.text).map_err(|e| Error::from_yaml(file.path, &e))?;
            for tier in doc.runner_tiers {
                match tier_paths.entry(tier.name.clone()) {
                    Entry::Occupied(first) => {
                        return Err(Error::DuplicateTier {
                            path: file.path.to_owned(),
                            name: tier.name,
                            first_path: (*first.get()).to_owned(),
                        });
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(file.path);
                    }
                }
                set.tiers.push(tier);
            }
            for model::RoleEntry(role) in doc.roles {
                match set.by_name.entry(role.name.clone()) {
                    Entry::Occupied(first) => {
                        return Err(Error::DuplicateRole {
                            path: file.path.to_owned(),
                            name: role.name,
                            first_path: role_paths.get(*first.get()).copied().unwrap_or_default().to_owned(),
                        });
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(set.roles.len());
                    }
                }
                // Deny rules and tier matches may stay issuer-wide: they only narrow what is granted.
                if let Some((i, problem)) =
                    role.allow.iter().enumerate().find_map(|(i, rule)| rule.unbound_issuer().map(|p| (i, p)))
                {
                    return Err(Error::AllowRuleWithoutIssuer {
                        path: file.path.to_owned(),
                        role: role.name,
                        rule: i + 1,
                        problem,
                    });
                }
                role_paths.push(file.path);
                set.roles.push(role);
            }
        }
        Ok(set)
    }

    pub fn role(&self, name: &str) -> Option<&Role> {
        self.by_name.get(name).and_then(|&i| self.roles.get(i))
    }

    /// Roles in the order their files and definitions were given.
    pub fn roles(&self) -> impl Iterator<Item = &Role> {
        self.roles.iter()
    }

    /// Name of the first runner tier whose match holds, if any.
    pub fn runner_tier(&self, job: &Job) -> Option<&str> {
        self.tier(job).map(|tier| tier.name)
    }

    /// The first runner tier whose match holds, if any.
    pub fn tier(&self, job: &Job) -> Option<Tier<'_>> {
        tiers::first_match(&self.tiers, job).map(|tier| Tier { name: &tier.name, single_use: tier.single_use })
    }

    /// Whether judging `requested` for `job` reads a runner fact the job lacks: in a requested
    /// role's rules, or in a tier match when the job's tier matters (a requested role tests
    /// `runner_tier`, or some tier is single-use), or for the runner key a single-use tier needs.
    /// Then the CI's API or a webhook should be asked before deciding.
    pub fn wants_runner_facts(&self, job: &Job, requested: &[String]) -> bool {
        let ctx = Ctx { job, tier: None };
        let lacks = |c: &Condition| c.field.is_runner_fact() && matches!(c.field.read(&ctx), Actual::Missing);
        let conditions = || {
            requested
                .iter()
                .filter_map(|name| self.role(name))
                .flat_map(|role| role.allow.iter().chain(&role.deny))
                .flat_map(|rule| rule.conditions.iter())
        };
        let single_use = self.tiers.iter().any(|t| t.single_use);
        let tier_matters = single_use || conditions().any(|c| c.field == Field::RunnerTier);
        conditions().any(lacks)
            || (tier_matters && self.tiers.iter().any(|t| t.conditions.iter().any(lacks)))
            || (single_use && job.runner_key().is_err())
    }

    /// All requested roles granted, or for each refused one the reasons. Requested names are a
    /// set: repeats are judged once, in first-seen order.
    pub fn decide(&self, job: &Job, requested: &[String]) -> Decision<'_> {
        let ctx = Ctx { job, tier: self.runner_tier(job) };
        let mut granted: Vec<&Role> = Vec::with_capacity(requested.len());
        let mut denied: Vec<RoleDenial> = Vec::new();
        for name in requested {
            let Some(role) = self.role(name) else {
                if !denied.iter().any(|d| d.role == *name) {
                    denied.push(RoleDenial::undefined(name));
                }
                continue;
            };
            if granted.iter().any(|g| std::ptr::eq(*g, role)) || denied.iter().any(|d| d.role == *name) {
                continue;
            }
            if role.grants(&ctx) {
                granted.push(role);
            } else {
                denied.push(RoleDenial { role: name.clone(), reasons: role.explain(&ctx) });
            }
        }
        if denied.is_empty() { Decision::Granted(granted) } else { Decision::Denied(denied) }
    }
}
