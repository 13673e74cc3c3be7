//! Every allow rule names its issuer: without one it matches a job of any CI, and a CI whose
//! names anyone may choose (a Jenkins folder `octo-org`, a multibranch project `octo-repo`)
//! passes for another CI's repository.

use super::{github_job, parse, reasons_for_r, role_policy};
use crate::ci::CiKind;
use crate::ci::Job;
use crate::policy::{Error, PolicyFile, PolicySet};

fn load(files: &[(&'static str, &str)]) -> Result<PolicySet, Error> {
    let files: Vec<PolicyFile<'_>> = files.iter().map(|(path, text)| PolicyFile { path, text }).collect();
    PolicySet::parse(&files)
}

const BOUND: &str = "roles:\n  - name: bound\n    backend: vault\n    max_ttl: 15m\n    vault: { policies: [p] }\n    allow: [ { issuer: github, repository_id: \"74\" } ]\n";

/// (path, text) of each file, in order.
type Files = Vec<(&'static str, String)>;
/// Where the error points: the file, the role, the rule's number, what is wrong.
type Refused<'a> = (&'a str, &'a str, usize, &'a str);

#[test]
fn an_allow_rule_without_issuer_is_refused_naming_role_rule_and_fix() {
    let unbound = "name: deploy\n    backend: vault\n    max_ttl: 15m\n    vault: { policies: [p] }\n    allow:";
    let role = |rules: &str| format!("roles:\n  - {unbound}\n{rules}");
    let named = "names no `issuer`";
    let any = "has an `issuer` glob that admits any issuer";
    let cases: Vec<(&str, Files, Refused)> = vec![
        (
            "the only rule",
            vec![("p.yaml", role("      - { repository: octo-org/octo-repo }\n"))],
            ("p.yaml", "deploy", 1, named),
        ),
        (
            "the second rule, the first bound",
            vec![(
                "p.yaml",
                role("      - { issuer: github, repository_id: \"74\" }\n      - { repository_id: \"74\" }\n"),
            )],
            ("p.yaml", "deploy", 2, named),
        ),
        (
            "a role after a bound one, in a second file",
            vec![("a.yaml", BOUND.into()), ("b.yaml", role("      - { job_name: octo-org/octo-repo/main }\n"))],
            ("b.yaml", "deploy", 1, named),
        ),
        (
            "only claims",
            vec![("p.yaml", role("      - { claims: { project_path: my-group/my-project } }\n"))],
            ("p.yaml", "deploy", 1, named),
        ),
        (
            "a glob any issuer matches",
            vec![("p.yaml", role("      - { issuer: \"glob:*\", repository_id: \"74\" }\n"))],
            ("p.yaml", "deploy", 1, any),
        ),
        (
            "a catch-all glob among named issuers",
            vec![("p.yaml", role("      - { issuer: [github, \"glob:**\"], repository_id: \"74\" }\n"))],
            ("p.yaml", "deploy", 1, any),
        ),
    ];
    for (name, files, (path, role, rule, problem)) in cases {
        let files: Vec<(&'static str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let error = match load(&files) {
            Ok(_) => panic!("case {name}: must not load"),
            Err(e) => e,
        };
        assert_eq!(error.code(), "allow_rule_without_issuer", "case {name}");
        let message = error.to_string();
        for part in [
            format!("{path}: role `{role}`, allow rule {rule} {problem}"),
            "matches a job of any CI".to_owned(),
            "a Jenkins folder `octo-org` with a multibranch project `octo-repo` passes for the GitHub repository `octo-org/octo-repo`".to_owned(),
            "hint: add `issuer: <name>`".to_owned(),
        ] {
            assert!(message.contains(&part), "case {name}: {message:?} lacks {part:?}");
        }
    }
}

#[test]
fn deny_rules_and_tier_matches_may_omit_the_issuer() {
    let cases = [
        (
            "a deny rule",
            role_policy("[]", "[ { issuer: github, repository_id: \"74\" } ]", "[ { event: pull_request } ]"),
        ),
        (
            "a tier match",
            role_policy(
                "[ { name: hosted, match: { runner_environment: github-hosted } } ]",
                "[ { issuer: github, runner_tier: hosted } ]",
                "[]",
            ),
        ),
        (
            "an issuer glob naming some issuers",
            role_policy("[]", "[ { issuer: \"glob:gh-*\", repository_id: \"74\" } ]", "[]"),
        ),
        ("several issuers", role_policy("[]", "[ { issuer: [github, gitlab], repository_id: \"74\" } ]", "[]")),
        (
            "a role with no allow rule",
            "roles: [ { name: r, backend: vault, max_ttl: 1h, vault: { policies: [p] } } ]".into(),
        ),
    ];
    for (name, text) in cases {
        if let Err(e) = load(&[("p.yaml", &text)]) {
            panic!("case {name}: {e}");
        }
    }
}

#[test]
fn a_jenkins_item_named_like_a_repository_does_not_get_its_role() {
    let set = parse(&role_policy("[]", "[ { issuer: github, repository: octo-org/octo-repo } ]", "[]"));
    assert_eq!(reasons_for_r(&set, &github_job()), Vec::<String>::new());
    // A folder `octo-org` holding a multibranch project `octo-repo`.
    let mut jenkins =
        Job::new("jenkins", "https://jenkins.example/job/octo-org/job/octo-repo/job/main/", "octo-org/octo-repo");
    jenkins.kind = Some(CiKind::Jenkins);
    assert_eq!(reasons_for_r(&set, &jenkins), ["issuer: jenkins is not one of the allowed values"]);
}
