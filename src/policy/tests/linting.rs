//! Risky rules `ci-creds policy check` warns about, one case per risk.

use super::{parse, role_policy};
use crate::ci::CiKind;

const SAFE: &str = r#"{ issuer: github, repository: octo-org/octo-repo, repository_id: "74", ref: refs/heads/main }"#;

fn messages(tiers: &str, allow: &str) -> Vec<String> {
    parse(&role_policy(tiers, allow, "[]"))
        .lint(&Default::default())
        .into_iter()
        .map(|w| {
            assert_eq!((w.role.as_str(), w.rule), ("r", 1));
            w.message
        })
        .collect()
}

#[test]
fn a_pinned_rule_on_protected_refs_is_quiet() {
    assert_eq!(messages("[]", &format!("[ {SAFE} ]")), Vec::<String>::new());
    assert!(messages("[]", r#"[ { issuer: github, owner_id: "65", event: push } ]"#).is_empty());
}

#[test]
fn warns_on_each_risk() {
    let no_repo = "the rule has no repository or owner condition";
    let recycled_repo = "the rule names `repository` without `repository_id`";
    let recycled_owner = "the rule names `owner` without `owner_id`";
    let pull_request = "this vault role is reachable from `event: pull_request`";
    let cases: Vec<(&str, &str, &str, Vec<&str>)> = vec![
        ("no repository condition", "[]", "[ { issuer: github, ref: refs/heads/main } ]", vec![no_repo]),
        (
            "repository without its id",
            "[]",
            "[ { issuer: github, repository: octo-org/octo-repo, event: push } ]",
            vec![recycled_repo],
        ),
        ("owner without an id", "[]", "[ { issuer: github, owner: octo-org, event: push } ]", vec![recycled_owner]),
        (
            "a glob matching any repository",
            "[]",
            r#"[ { issuer: github, repository: "glob:*/*", repository_id: "74", event: push } ]"#,
            vec!["a `glob:` in `repository` matches any repository"],
        ),
        (
            "a glob limited to one owner is fine",
            "[]",
            r#"[ { issuer: github, repository: "glob:octo-org/*", owner_id: "65", event: push } ]"#,
            vec![recycled_repo],
        ),
        ("no event and no ref", "[]", r#"[ { issuer: github, repository_id: "74" } ]"#, vec![pull_request]),
        (
            "pull_request listed",
            "[]",
            r#"[ { issuer: github, repository_id: "74", event: [push, pull_request] } ]"#,
            vec![pull_request],
        ),
        (
            "merge requests by glob",
            "[]",
            r#"[ { issuer: github, repository_id: "74", event: "glob:merge_request*" } ]"#,
            vec![pull_request],
        ),
        (
            "pull refs admitted",
            "[]",
            r#"[ { issuer: github, repository_id: "74", ref: "glob:refs/pull/**" } ]"#,
            vec![pull_request],
        ),
        (
            "an undefined runner tier",
            "[ { name: hosted, match: { runner_environment: github-hosted } } ]",
            r#"[ { issuer: github, repository_id: "74", event: push, runner_tier: [hosted, hostd] } ]"#,
            vec!["`runner_tier: hostd` names no runner tier defined in `runner_tiers`"],
        ),
    ];
    for (name, tiers, allow, expected) in cases {
        let got = messages(tiers, allow);
        assert_eq!(got.len(), expected.len(), "case: {name}: {got:?}");
        for (message, prefix) in got.iter().zip(&expected) {
            assert!(message.starts_with(prefix), "case: {name}: {message}");
        }
    }
}

#[test]
fn deny_rules_are_not_judged() {
    let set = parse(&role_policy("[]", &format!("[ {SAFE} ]"), "[ { event: pull_request } ]"));
    assert!(set.lint(&Default::default()).is_empty());
}

#[test]
fn an_azure_pipelines_rule_that_pins_neither_project_nor_pipeline_is_warned_about() {
    let kinds = [("azure".to_owned(), CiKind::AzurePipelines), ("gh".to_owned(), CiKind::Github)].into();
    let lint = |allow: &str| -> Vec<String> {
        parse(&role_policy("[]", allow, "[]")).lint(&kinds).into_iter().map(|w| w.message).collect()
    };
    let unpinned = lint(r#"[ { issuer: azure, repository: octo-org/octo-repo, ref: refs/heads/main } ]"#);
    assert_eq!(unpinned.len(), 1, "{unpinned:?}");
    assert!(unpinned[0].starts_with("this Azure Pipelines rule pins neither the project nor the pipeline"));
    let pinned = r#"[ { issuer: azure, repository: octo-org/octo-repo, ref: refs/heads/main,
        claims: { prj_id: 271ef6f7-5998-4b0f-86fb-4b54d9129990, def_id: "12" } } ]"#;
    assert_eq!(lint(pinned), Vec::<String>::new());
    // A rule that may also match another CI's issuer is judged as before.
    let mixed = lint(r#"[ { issuer: [azure, gh], repository: octo-org/octo-repo, ref: refs/heads/main } ]"#);
    assert!(mixed.iter().any(|m| m.starts_with("the rule names `repository` without `repository_id`")), "{mixed:?}");
    // Without the broker's config, an issuer's kind is unknown.
    let unknown = parse(&role_policy("[]", r#"[ { issuer: azure, repository: o/r, ref: refs/heads/main } ]"#, "[]"));
    assert!(unknown.lint(&Default::default())[0].message.starts_with("the rule names `repository` without"));
}

#[test]
fn every_ci_s_pinning_condition_is_a_policy_field() {
    for kind in CiKind::ALL {
        if let Some(key) = kind.ci().lints.pinned_by {
            assert!(
                crate::policy::field::Field::from_key(key).is_some(),
                "{}: `{key}` is no policy field",
                kind.name()
            );
        }
    }
}
