//! Risky rules that load fine but probably grant more than their author meant. Only allow rules
//! are judged: a deny rule can only ever narrow what is granted.

use std::collections::BTreeMap;

use super::PolicySet;
use super::condition::Condition;
use super::field::Field;
use super::model::BackendKind;
use super::rule::Rule;
use crate::ci::{ChangeRequest, CiKind, PinningClaims};

/// Probes for "any value": two names no policy author would list, with different owners.
const ANY_REPOSITORY: [&str; 2] = ["ci-creds-lint-probe/any-repo", "someone-else/other-repo"];
const ANY_OWNER: [&str; 2] = ["ci-creds-lint-probe", "someone-else"];
const ANY_ID: [&str; 2] = ["1", "987654321"];

/// One risky allow rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub role: String,
    /// 1-based index among the role's allow rules.
    pub rule: usize,
    pub message: String,
    pub hint: String,
}

impl PolicySet {
    /// Every risky allow rule, in role and rule order. `issuer_kinds` (the broker's issuers by
    /// name, when known) lets a rule be judged as the CI whose issuers it names.
    pub fn lint(&self, issuer_kinds: &BTreeMap<String, CiKind>) -> Vec<Warning> {
        let tiers: Vec<&str> = self.tiers.iter().map(|t| t.name.as_str()).collect();
        let mut warnings = Vec::new();
        for role in self.roles() {
            for (i, rule) in role.allow.iter().enumerate() {
                let mut warn = |message: String, hint: &str| {
                    warnings.push(Warning { role: role.name.clone(), rule: i + 1, message, hint: hint.to_owned() });
                };
                lint_rule(rule, role.backend, &tiers, issuer_kinds, &mut warn);
            }
        }
        warnings
    }
}

fn lint_rule(
    rule: &Rule,
    backend: BackendKind,
    tiers: &[&str],
    issuer_kinds: &BTreeMap<String, CiKind>,
    warn: &mut impl FnMut(String, &str),
) {
    let has = |field: Field| find(rule, &field).is_some();
    let pinning = one_ci(rule, issuer_kinds).and_then(|kind| kind.ci().lints.pinning_claims.as_ref());
    if let Some(PinningClaims { claims, message, hint }) = pinning
        && !claims.iter().any(|claim| has(Field::Claim((*claim).into())))
    {
        warn((*message).into(), hint);
    }
    let pinned_by_name = has(Field::Repository) || has(Field::Owner);
    let pinned_by_id = has(Field::RepositoryId) || has(Field::OwnerId);
    let pinned_as_the_ci_allows = pinned_by().any(|(_, field)| has(field));
    if pinning.is_some() || pinned_as_the_ci_allows {
        // Pinned as far as the CI allows, or judged by its claims above.
    } else if !pinned_by_name && !pinned_by_id {
        let others: String = pinned_by().map(|(title, field)| format!("; `{field}:` for {title}")).collect();
        warn(
            "the rule has no repository or owner condition: any repository the issuer serves can match it".into(),
            &format!("add `repository_id:` (or `owner_id:` for an organisation-wide rule{others})"),
        );
    } else if has(Field::Repository) && !has(Field::RepositoryId) {
        warn(
            "the rule names `repository` without `repository_id`: a deleted and recreated repository of that name would inherit this role".into(),
            "add `repository_id:` with the repository's numeric id",
        );
    } else if has(Field::Owner) && !pinned_by_id {
        warn(
            "the rule names `owner` without `owner_id`: a recreated account of that name would inherit this role"
                .into(),
            "add `owner_id:` with the owner's numeric id",
        );
    }
    for (field, probes) in [
        (Field::Repository, &ANY_REPOSITORY),
        (Field::RepositoryId, &ANY_ID),
        (Field::Owner, &ANY_OWNER),
        (Field::OwnerId, &ANY_ID),
    ] {
        if let Some(condition) = find(rule, &field)
            && probes.iter().all(|p| condition.values.glob_matches(p))
        {
            warn(
                format!("a `glob:` in `{field}` matches any {field}"),
                "list the exact values, or anchor the glob to one owner such as `glob:octo-org/*`",
            );
        }
    }
    if let Some(event) = reachable_from_pull_requests(rule) {
        let backend = backend.as_str();
        warn(
            format!(
                "this {backend} role is reachable from `event: {event}`: code proposed in a pull or merge request would get its credentials"
            ),
            "add an `event:` condition listing the events of reviewed code (pushes, manual runs) or a `ref:` of protected branches",
        );
    }
    if let Some(condition) = find(rule, &Field::RunnerTier) {
        for tier in condition.values.texts() {
            if !tier.starts_with("glob:") && !tiers.contains(&tier.as_str()) {
                warn(
                    format!(
                        "`runner_tier: {tier}` names no runner tier defined in `runner_tiers`, so the rule never matches"
                    ),
                    "define the tier or fix the name",
                );
            }
        }
    }
}

/// A rule is reachable when neither its `event` nor its `ref` condition keeps the jobs of every
/// CI's pull and merge requests out; the warning names the first CI's event.
fn reachable_from_pull_requests(rule: &Rule) -> Option<&'static str> {
    let requests: Vec<_> = CiKind::ALL.iter().filter_map(|kind| kind.ci().lints.change_request.as_ref()).collect();
    let admits = |field: Field, probe: fn(&ChangeRequest) -> &str| {
        find(rule, &field).is_none_or(|c| requests.iter().any(|request| c.values.matches(probe(request))))
    };
    let reachable = admits(Field::Event, |request| request.event) && admits(Field::Ref, |request| request.git_ref);
    requests.first().map(|request| request.event).filter(|_| reachable)
}

/// The CIs' conditions that pin a job where their tokens carry no repository id, with the CI's
/// title.
fn pinned_by() -> impl Iterator<Item = (&'static str, Field)> {
    CiKind::ALL.into_iter().filter_map(|kind| {
        let field = Field::from_key(kind.ci().lints.pinned_by?)?;
        Some((kind.ci().title, field))
    })
}

/// The CI of every issuer the rule's `issuer` condition lists, when they are all known to be of
/// one.
fn one_ci(rule: &Rule, issuer_kinds: &BTreeMap<String, CiKind>) -> Option<CiKind> {
    let names = find(rule, &Field::Issuer)?.values.texts();
    let mut kinds = names.iter().map(|name| issuer_kinds.get(name.as_str()).copied());
    let first = kinds.next()??;
    kinds.all(|kind| kind == Some(first)).then_some(first)
}

fn find<'r>(rule: &'r Rule, field: &Field) -> Option<&'r Condition> {
    rule.conditions.iter().find(|c| c.field == *field)
}
