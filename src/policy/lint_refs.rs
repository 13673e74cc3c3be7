//! Rules on what a build runs for, where the issuer's tokens cannot tell it: a Jenkins issuer
//! without its build API. A `branch` claim names a tag build's tag and a change request's `PR-7`
//! as branches, and without one the ref is unknown.

use std::collections::{BTreeMap, BTreeSet};

use super::PolicySet;
use super::field::Field;
use super::lint::Warning;
use crate::ci::CiKind;

impl PolicySet {
    /// Every allow rule conditioned on `ref`, `ref_type` or `event` that a Jenkins issuer without
    /// `[ci_api.<issuer>]` (`with_api` lists those with one) can match: the rule names it, or
    /// names no issuer at all.
    pub fn lint_unknowable_refs(
        &self,
        issuer_kinds: &BTreeMap<String, CiKind>,
        with_api: &BTreeSet<String>,
    ) -> Vec<Warning> {
        let blind: BTreeSet<&str> = issuer_kinds
            .iter()
            .filter(|(name, kind)| **kind == CiKind::Jenkins && !with_api.contains(*name))
            .map(|(name, _)| name.as_str())
            .collect();
        let mut warnings = Vec::new();
        for role in self.roles() {
            for (i, rule) in role.allow.iter().enumerate() {
                let Some(field) = [Field::Ref, Field::RefType, Field::Event]
                    .into_iter()
                    .find(|field| rule.conditions.iter().any(|c| c.field == *field))
                else {
                    continue;
                };
                let issuer = rule.conditions.iter().find(|c| c.field == Field::Issuer);
                let named: Vec<&str> = match issuer {
                    Some(condition) => blind.iter().copied().filter(|name| condition.values.matches(name)).collect(),
                    None => blind.iter().copied().collect(),
                };
                if named.is_empty() {
                    continue;
                }
                warnings.push(Warning {
                    role: role.name.clone(),
                    rule: i + 1,
                    message: format!(
                        "the rule conditions `{field}` for Jenkins issuer(s) {} with no `[ci_api.<issuer>]`: without the build API a tag or a change request cannot be told from a branch, and a build with no `branch` claim has no ref",
                        named.join(", ")
                    ),
                    hint: "configure `[ci_api.<issuer>]` for the issuer, so that Jenkins itself tells each build's branch, tag or change request".into(),
                });
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyFile;

    const POLICY: &str = r#"
roles:
  - name: main-only
    backend: vault
    max_ttl: 5m
    vault: { policies: [p] }
    allow:
      - { issuer: jenkins, job_name: a/b/main, ref: refs/heads/main }
      - { issuer: jenkins, job_name: a/b/main }
      - { issuer: [github], repository: a/b, repository_id: "1", event: [push] }
"#;

    fn warnings(with_api: &[&str]) -> Vec<(String, usize)> {
        let set = PolicySet::parse(&[PolicyFile { path: "p.yaml", text: POLICY }]).unwrap();
        let kinds: BTreeMap<String, CiKind> =
            [("jenkins".to_owned(), CiKind::Jenkins), ("github".to_owned(), CiKind::Github)].into();
        let with_api: BTreeSet<String> = with_api.iter().map(|name| (*name).to_owned()).collect();
        set.lint_unknowable_refs(&kinds, &with_api).into_iter().map(|w| (w.role, w.rule)).collect()
    }

    #[test]
    fn a_ref_rule_for_a_jenkins_issuer_without_the_api_is_warned_of() {
        assert_eq!(warnings(&[]), [("main-only".to_owned(), 1)]);
        assert_eq!(warnings(&["jenkins"]), []);
    }
}
