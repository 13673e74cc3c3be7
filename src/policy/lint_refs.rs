//! Rules on what a build runs for, where the issuer's tokens cannot tell it without its CI's API
//! (`RuleLints::refs_need_api` of the issuer's CI says so, and why).

use std::collections::{BTreeMap, BTreeSet};

use super::PolicySet;
use super::field::Field;
use super::lint::Warning;
use crate::ci::{CiKind, RefsNeedApi};

impl PolicySet {
    /// Every allow rule conditioned on `ref`, `ref_type` or `event` that an issuer of such a CI
    /// without `[ci_api.<issuer>]` (`with_api` lists those with one) can match: the rule names
    /// it, or names no issuer at all. One warning per rule and CI.
    pub fn lint_unknowable_refs(
        &self,
        issuer_kinds: &BTreeMap<String, CiKind>,
        with_api: &BTreeSet<String>,
    ) -> Vec<Warning> {
        let mut warnings = Vec::new();
        for kind in CiKind::ALL {
            let Some(RefsNeedApi { why, hint }) = &kind.ci().lints.refs_need_api else { continue };
            let blind: BTreeSet<&str> = issuer_kinds
                .iter()
                .filter(|(name, of)| **of == kind && !with_api.contains(*name))
                .map(|(name, _)| name.as_str())
                .collect();
            for (role, rule, field, named) in self.rules_on_refs_matching(&blind) {
                warnings.push(Warning {
                    role: role.to_owned(),
                    rule,
                    message: format!(
                        "the rule conditions `{field}` for {} issuer(s) {} with no `[ci_api.<issuer>]`: {why}",
                        kind.ci().title,
                        named.join(", ")
                    ),
                    hint: (*hint).into(),
                });
            }
        }
        warnings
    }

    /// Each allow rule (its role, its 1-based index, the field) conditioned on `ref`, `ref_type`
    /// or `event` that an issuer of `issuers` can match, with those it can.
    fn rules_on_refs_matching<'a>(&'a self, issuers: &BTreeSet<&'a str>) -> Vec<(&'a str, usize, Field, Vec<&'a str>)> {
        let mut found = Vec::new();
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
                    Some(condition) => issuers.iter().copied().filter(|name| condition.values.matches(name)).collect(),
                    None => issuers.iter().copied().collect(),
                };
                if !named.is_empty() {
                    found.push((role.name.as_str(), i + 1, field, named));
                }
            }
        }
        found
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
