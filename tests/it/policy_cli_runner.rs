//! Runner facts in the policy tooling: `policy explain --runner-fact` and a test case's
//! `runner:`, each standing in for what the CI's API or a webhook would tell at an exchange.

use crate::policy_cli::{arg, ci_creds, dir_with, fixture, stdout};

const RUNNERS: &str = r#"
runner_tiers:
  - name: release
    single_use: true
    match: { runner_environment: self-hosted, runner_group: release }
roles:
  - name: release-deploy
    backend: vault
    max_ttl: 15m
    vault: { policies: [deploy] }
    allow:
      - { issuer: github, repository_id: "74", runner_tier: release, runner_labels: [linux] }
"#;

#[test]
fn explain_takes_runner_facts_and_shows_each_with_its_source() {
    let dir = dir_with(&[("roles.yaml", RUNNERS)]);
    let claims = std::fs::read_to_string(fixture("github-token-claims.json")).unwrap();
    let claims = claims.replace("\"github-hosted\"", "\"self-hosted\"");
    std::fs::write(dir.path().join("claims.json"), claims).unwrap();
    let claims = dir.path().join("claims.json");
    let explain = |facts: &[&str]| {
        let mut args = vec!["policy", "explain", "--claims", arg(&claims)];
        for fact in facts {
            args.extend(["--runner-fact", fact]);
        }
        args.push(arg(dir.path()));
        ci_creds(&args)
    };

    let output = explain(&["group=release", "labels=self-hosted,Linux"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let text = stdout(&output);
    assert!(
        text.contains(
            "runner: environment self-hosted (token), group release (given), labels [self-hosted, Linux] (given)"
        ),
        "{text}"
    );
    assert!(text.contains("runner tier: release (single-use)"), "{text}");
    assert!(text.contains("role release-deploy: granted"), "{text}");
    assert!(text.contains("held    runner_labels: [self-hosted, Linux] (given)  (accepts linux)"), "{text}");

    let text = stdout(&explain(&[]));
    assert!(text.contains("runner tier: (none)") && text.contains("role release-deploy: denied"), "{text}");
    assert!(text.contains("failed  runner_labels: (unknown)  (accepts linux)"), "{text}");

    let output = explain(&["colour=blue"]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown runner fact `colour`"));
}

#[test]
fn a_test_case_gives_the_runner_the_ci_would_tell() {
    let claims = std::fs::read_to_string(fixture("github-token-claims.json")).unwrap();
    let tests = r#"
tests:
  - name: a release runner may deploy
    claims_file: claims.json
    claims: { runner_environment: self-hosted }
    runner: { group: release, labels: [self-hosted, linux] }
    granted: [release-deploy]
  - name: without labels it may not
    claims_file: claims.json
    claims: { runner_environment: self-hosted }
    runner: { group: release }
    denied: [release-deploy]
  - name: nor from another group
    claims_file: claims.json
    claims: { runner_environment: self-hosted }
    runner: { group: default, labels: [linux] }
    denied: [release-deploy]
"#;
    let dir = dir_with(&[("roles.yaml", RUNNERS), ("roles_test.yaml", tests), ("claims.json", &claims)]);
    let output = ci_creds(&["policy", "test", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).ends_with("3 passed, 0 failed\n"), "{}", stdout(&output));

    let bad = tests.replace("runner: { group: default", "runner: { grup: default");
    let dir = dir_with(&[("roles.yaml", RUNNERS), ("roles_test.yaml", &bad), ("claims.json", &claims)]);
    let output = ci_creds(&["policy", "test", arg(dir.path())]);
    assert_ne!(output.status.code(), Some(0));
    let said = format!("{}{}", stdout(&output), String::from_utf8_lossy(&output.stderr));
    assert!(said.contains("unknown field `grup`"), "{said}");
}
