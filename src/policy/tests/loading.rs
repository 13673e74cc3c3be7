//! Loading: what a policy author gets wrong, and that the error says where and how to fix it.

use crate::policy::{Error, PolicyFile, PolicySet};

const GOOD_ROLE: &str = "roles:
  - name: deploy
    backend: vault
    max_ttl: 15m
    vault: { policies: [deploy] }
    allow:
      - { issuer: github, repository: octo-org/octo-repo }
";

const DESIGN_EXAMPLE: &str = r#"
runner_tiers:
  - name: hosted
    match: { runner_environment: [github-hosted, gitlab-hosted, buildkite-hosted] }
  - name: release
    match: { issuer: gitlab, runner_id: ["12", "13"] }
roles:
  - name: deploy-prod
    backend: vault
    max_ttl: 15m
    vault:
      policies: [deploy-prod]
    allow:
      - issuer: github
        repository: octo-org/octo-repo
        repository_id: "74"
        ref: refs/heads/main
        event: [push, workflow_dispatch]
        environment: prod
        runner_tier: hosted
    deny:
      - claims: { actor: "dependabot[bot]" }
"#;

fn load(files: &[(&'static str, &str)]) -> Result<PolicySet, Error> {
    let files: Vec<PolicyFile<'_>> = files.iter().map(|(path, text)| PolicyFile { path, text }).collect();
    PolicySet::parse(&files)
}

/// A one-file policy whose only role has the given lines after `name: r` (at role indentation).
fn role_with(body: &str) -> String {
    let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
    format!("roles:\n  - name: r\n{body}")
}

const VAULT_ROLE: &str = "backend: vault\nmax_ttl: 15m\nvault: { policies: [p] }\n";

fn rule(rule: &str) -> String {
    role_with(&format!("{VAULT_ROLE}allow:\n  - {rule}"))
}

/// (path, text) of each file, in order.
type Files = Vec<(&'static str, String)>;

#[test]
fn load_errors_name_file_line_and_problem() {
    // (case, files, substrings the message must contain)
    let cases: Vec<(&str, Files, &[&str])> = vec![
        (
            "unknown top-level key",
            vec![("p.yaml", "roles: []\nrolez: []\n".into())],
            &["p.yaml:2:1: ", "unknown field `rolez`", "`roles`"],
        ),
        (
            "unknown role key",
            vec![("p.yaml", role_with(&format!("{VAULT_ROLE}ttl: 1h\n")))],
            &["p.yaml:6:5: ", "unknown field `ttl`"],
        ),
        (
            "unknown condition key",
            vec![("p.yaml", rule("{ repository: a/b, reff: refs/heads/main }"))],
            &["p.yaml:7:28: ", "unknown field `reff`", "`ref`"],
        ),
        (
            "sub as a claim",
            vec![("p.yaml", rule("{ claims: { sub: \"repo:a/b:ref:refs/heads/main\" } }"))],
            &["p.yaml:7:21: ", "`sub` cannot be a condition", "individual claims"],
        ),
        (
            "malformed glob",
            vec![("p.yaml", rule("{ ref: \"glob:refs/[\" }"))],
            &["p.yaml:7:16: ", "malformed glob", "hint"],
        ),
        ("glob with no pattern", vec![("p.yaml", rule("{ ref: \"glob:\" }"))], &["p.yaml:7:16: ", "needs a pattern"]),
        (
            "unknown backend",
            vec![("p.yaml", role_with("backend: gcp\nmax_ttl: 15m\n"))],
            &["p.yaml:3:14: ", "unknown variant `gcp`", "`vault`"],
        ),
        ("empty rule", vec![("p.yaml", rule("{}"))], &["p.yaml:7:9: ", "no condition would match every job"]),
        ("empty rule as null", vec![("p.yaml", rule(""))], &["p.yaml:", "no condition would match every job"]),
        ("empty claims", vec![("p.yaml", rule("{ claims: {} }"))], &["p.yaml:7:", "`claims:` is empty"]),
        ("empty list", vec![("p.yaml", rule("{ ref: [] }"))], &["p.yaml:7:16: ", "empty list matches nothing"]),
        ("value left out", vec![("p.yaml", rule("{ repository: a/b, ref: }"))], &["p.yaml:7:", "has no value"]),
        ("decimal number", vec![("p.yaml", rule("{ runner_id: 1.5 }"))], &["p.yaml:7:", "quote it"]),
        (
            "a glob among runner labels",
            vec![("p.yaml", rule("{ runner_labels: [linux, \"glob:gpu-*\"] }"))],
            &["p.yaml:7:", "`runner_labels` lists label names, not globs"],
        ),
        ("nested list", vec![("p.yaml", rule("{ event: [[push]] }"))], &["p.yaml:7:", "lists may not nest"]),
        (
            "condition twice",
            vec![("p.yaml", rule("{ claims: { actor: a, actor: b } }"))],
            &["p.yaml:7:", "given twice"],
        ),
        (
            "runner_tier inside a tier match",
            vec![("p.yaml", "runner_tiers:\n  - name: t\n    match: { runner_tier: x }\n".into())],
            &["p.yaml:3:14: ", "`runner_tier` cannot be used"],
        ),
        (
            "empty tier match",
            vec![("p.yaml", "runner_tiers:\n  - name: t\n    match: {}\n".into())],
            &["p.yaml:3:12: ", "every job in this tier"],
        ),
        (
            "vault role without vault section",
            vec![("p.yaml", role_with("backend: vault\nmax_ttl: 15m\nallow: [ { issuer: github, owner: o } ]\n"))],
            &["p.yaml:2:5: ", "role `r` has backend vault but no `vault:` section", "hint"],
        ),
        (
            "empty vault policies",
            vec![("p.yaml", role_with("backend: vault\nmax_ttl: 15m\nvault: { policies: [] }\n"))],
            &["p.yaml:5:12: ", "`vault.policies` is empty"],
        ),
        (
            "unparsable max_ttl",
            vec![("p.yaml", role_with("backend: vault\nmax_ttl: 15 parsecs\n"))],
            &["p.yaml:4:14: ", "max_ttl `15 parsecs` is not a duration", "15m"],
        ),
        (
            "zero max_ttl",
            vec![("p.yaml", role_with("backend: vault\nmax_ttl: 0s\n"))],
            &["p.yaml:4:14: ", "greater than zero"],
        ),
        (
            "max_ttl without unit",
            vec![("p.yaml", role_with("backend: vault\nmax_ttl: 900\n"))],
            &["p.yaml:4:14: ", "a duration with a unit"],
        ),
        (
            "missing max_ttl",
            vec![("p.yaml", role_with("backend: vault\nvault: { policies: [p] }\n"))],
            &["p.yaml:2:5: ", "missing field `max_ttl`"],
        ),
        (
            "YAML syntax error",
            vec![("p.yaml", "roles:\n  - name: \"unclosed\n".into())],
            &["p.yaml:3:1: found unexpected end of stream, while scanning a quoted scalar"],
        ),
        (
            "duplicate role across two files",
            vec![("a.yaml", GOOD_ROLE.into()), ("b.yaml", GOOD_ROLE.into())],
            &["b.yaml: role `deploy` is already defined in a.yaml", "hint"],
        ),
        (
            "duplicate role in one file",
            vec![("a.yaml", format!("{GOOD_ROLE}{}", GOOD_ROLE.trim_start_matches("roles:\n")))],
            &["a.yaml: role `deploy` is already defined in a.yaml"],
        ),
        (
            "duplicate tier across two files",
            vec![
                ("a.yaml", "runner_tiers: [ { name: t, match: { runner_id: 1 } } ]\n".into()),
                ("b.yaml", "runner_tiers: [ { name: t, match: { runner_id: 2 } } ]\n".into()),
            ],
            &["b.yaml: runner tier `t` is already defined in a.yaml"],
        ),
    ];
    for (name, files, expected) in cases {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let message = match load(&files) {
            Ok(_) => panic!("case {name}: must not load"),
            Err(e) => e.to_string(),
        };
        for part in expected {
            assert!(message.contains(part), "case {name}: {message:?} lacks {part:?}");
        }
    }
}

#[test]
fn valid_files_load() {
    let cases: Vec<(&str, Vec<&str>, usize)> = vec![
        ("empty file", vec![""], 0),
        ("only comments", vec!["# nothing yet\n"], 0),
        ("empty lists", vec!["runner_tiers: []\nroles: []\n"], 0),
        ("tiers only", vec!["runner_tiers: [ { name: t, match: { runner_id: 1 } } ]\n"], 0),
        (
            "roles combine across files",
            vec![GOOD_ROLE, "roles: [ { name: other, backend: vault, max_ttl: 1h, vault: { policies: [o] } } ]"],
            2,
        ),
        ("the example from the design", vec![DESIGN_EXAMPLE], 1),
    ];
    for (name, texts, roles) in cases {
        let files: Vec<(&'static str, &str)> = texts.into_iter().map(|t| ("p.yaml", t)).collect();
        match load(&files) {
            Ok(set) => assert_eq!(set.roles().count(), roles, "case: {name}"),
            Err(e) => panic!("case {name}: {e}"),
        }
    }
}

#[test]
fn the_design_example_grants_the_fixture_job() {
    let set = load(&[("p.yaml", DESIGN_EXAMPLE)]);
    let set = match set {
        Ok(set) => set,
        Err(e) => panic!("{e}"),
    };
    let job = super::github_job();
    assert_eq!(set.runner_tier(&job), Some("hosted"));
    assert_eq!(super::decide(&set, &job, &["deploy-prod"]), Ok(vec!["deploy-prod".to_owned()]));
}

#[test]
fn a_max_ttl_past_31_days_is_refused_at_load_rather_than_overflowing_at_exchange() {
    let error = load(&[(
        "p.yaml",
        &role_with("backend: vault\nmax_ttl: 100000y\nvault: { policies: [p] }\nallow:\n  - { issuer: github, repository_id: \"74\" }"),
    )])
    .expect_err("refused");
    assert!(error.to_string().contains("over 31d"), "{error}");
    assert!(
        load(&[(
            "p.yaml",
            &role_with("backend: vault\nmax_ttl: 31d\nvault: { policies: [p] }\nallow:\n  - { issuer: github, repository_id: \"74\" }")
        )])
        .is_ok()
    );
}
