//! `ci-creds policy check|explain|test` run as a binary on policy directories, as a policy
//! author would in a pre-merge check.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROLE: &str = r#"
runner_tiers:
  - name: hosted
    match: { runner_environment: github-hosted }
roles:
  - name: deploy
    backend: vault
    max_ttl: 15m
    vault: { policies: [deploy] }
    allow:
      - { issuer: gh, repository_id: "74", ref: refs/heads/main, runner_tier: hosted }
"#;

pub(crate) fn ci_creds(args: &[&str]) -> Output {
    Command::new(crate::support::broker::binary()).args(args).env("RUST_LOG", "off").output().expect("binary runs")
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

pub(crate) fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub(crate) fn repo_policy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policy")
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

#[test]
fn the_shipped_example_policy_passes_its_tests_and_check() {
    let tested = ci_creds(&["policy", "test", arg(&repo_policy())]);
    assert_eq!(tested.status.code(), Some(0), "{}", stdout(&tested));
    assert!(stdout(&tested).ends_with("10 passed, 0 failed\n"), "{}", stdout(&tested));
    let checked = ci_creds(&["policy", "check", arg(&repo_policy())]);
    assert_eq!(checked.status.code(), Some(0), "{}", stdout(&checked));
    assert!(stdout(&checked).ends_with("1 file(s), 0 error(s), 0 warning(s)\n"));
}

#[test]
fn check_reports_every_broken_file_with_line_and_hint() {
    let dir = dir_with(&[
        ("a.yaml", "roles:\n  - name: a\n    backend: vault\n    max_ttl: 15\n    vault: { policies: [a] }\n"),
        (
            "b.yml",
            "roles:\n  - name: b\n    backend: vault\n    max_ttl: 15m\n    vault: { policies: [b] }\n    allow:\n      - { issuer: gh, sub: repo:x }\n",
        ),
        ("ok.yaml", ROLE),
        ("ok_test.yaml", "this is: [not policy"),
    ]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let a = dir.path().join("a.yaml").display().to_string();
    let b = dir.path().join("b.yml").display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with(&format!("error: {a}:4:")), "{text}");
    assert!(lines[0].contains("max_ttl `15` is not a duration with a unit; hint: write it like 15s or 15m"), "{text}");
    assert!(lines[1].starts_with(&format!("error: {b}:7:")), "{text}");
    assert!(lines[1].contains("unknown field `sub`"), "{text}");
    assert!(lines[2].ends_with(": 3 file(s), 2 error(s), 0 warning(s)"), "the test file is skipped: {text}");
}

#[test]
fn check_reports_a_role_defined_in_two_files() {
    let dir = dir_with(&[
        ("one.yaml", ROLE),
        (
            "two.yaml",
            &ROLE.replace("runner_tiers:\n  - name: hosted\n    match: { runner_environment: github-hosted }\n", ""),
        ),
    ]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("role `deploy` is already defined in"), "{}", stdout(&output));
}

#[test]
fn check_refuses_an_allow_rule_without_issuer_and_passes_issuer_wide_deny_rules_and_tiers() {
    // A Jenkins folder `octo-org` holding a multibranch project `octo-repo` would match this rule.
    let unbound = ROLE.replace("{ issuer: gh, repository_id", "{ repository_id");
    let dir = dir_with(&[("roles.yaml", &unbound)]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let text = stdout(&output);
    let path = dir.path().join("roles.yaml").display().to_string();
    assert!(text.starts_with(&format!("error: {path}: role `deploy`, allow rule 1 names no `issuer`")), "{text}");
    assert!(text.contains("matches a job of any CI") && text.contains("hint: add `issuer: <name>`"), "{text}");
    assert!(text.ends_with(": 1 file(s), 1 error(s), 0 warning(s)\n"), "{text}");

    // The tier's match and the deny rule name no issuer: they only narrow what is granted.
    let narrowing = format!("{ROLE}    deny:\n      - {{ event: pull_request }}\n");
    let dir = dir_with(&[("roles.yaml", &narrowing)]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

#[test]
fn check_warns_on_risky_rules_and_still_passes() {
    let risky = r#"
roles:
  - name: wide
    backend: vault
    max_ttl: 15m
    vault: { policies: [p] }
    allow:
      - { issuer: gh, repository: "glob:*/*", runner_tier: hosted }
"#;
    let dir = dir_with(&[("risky.yaml", risky)]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    let path = dir.path().join("risky.yaml").display().to_string();
    let prefix = format!("warning: {path}: role `wide`, allow rule 1: ");
    let warnings: Vec<&str> = text.lines().filter(|l| l.starts_with(&prefix)).collect();
    assert_eq!(warnings.len(), 4, "{text}");
    for expected in [
        "without `repository_id`",
        "a `glob:` in `repository` matches any repository",
        "reachable from `event: pull_request`",
        "`runner_tier: hosted` names no runner tier",
    ] {
        assert!(warnings.iter().any(|w| w.contains(expected)), "{expected}: {text}");
    }
    assert!(warnings.iter().all(|w| w.contains("; hint: ")));
}

#[test]
fn the_broker_loader_skips_policy_tests() {
    let dir = dir_with(&[("roles.yaml", ROLE), ("roles_test.yaml", "tests: []"), ("more_test.yml", "tests: []")]);
    let set = ci_creds::config::load_policies(dir.path()).expect("test files are not policy");
    assert_eq!(set.roles().count(), 1);
}

#[test]
fn test_reports_failures_with_the_reasons_and_exits_1() {
    let claims = std::fs::read_to_string(repo_policy().join("testdata/github-deploy.json")).unwrap();
    let tests = r#"
tests:
  - name: main may deploy
    claims_file: claims.json
    issuer: gh
    kind: github
    granted: [deploy]
  - name: wrongly expected
    claims_file: claims.json
    claims: { ref: refs/heads/dev }
    issuer: gh
    kind: github
    granted: [deploy]
    denied: [deplyo]
"#;
    let dir = dir_with(&[("roles.yaml", ROLE), ("roles_test.yaml", tests), ("claims.json", &claims)]);
    let output = ci_creds(&["policy", "test", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(1));
    let path = dir.path().join("roles_test.yaml").display().to_string();
    assert_eq!(
        stdout(&output),
        format!(
            "{path}\n  mapping: issuer `gh`, kind github: given by --issuer and --kind\n  ok      main may deploy\n  FAILED  wrongly expected\n          deplyo: no such role in the policy\n          deploy: expected granted, was denied: ref: refs/heads/dev is not one of the allowed values\n1 passed, 1 failed\n"
        )
    );
}

#[test]
fn explain_maps_claims_through_the_broker_config() {
    let config = "listen = \"127.0.0.1:1\"\naudience = \"a\"\npolicy_dir = \"policy\"\n[store]\nurl = \"sqlite://x.db\"\n[[issuers]]\nname = \"gh\"\nkind = \"github\"\nissuer = \"https://token.actions.githubusercontent.com\"\n[vault]\naddress = \"http://127.0.0.1:1\"\ntoken_env = \"UNSET_VAULT_TOKEN_VAR\"\n";
    let dir = dir_with(&[("config.toml", config), ("policy/roles.yaml", ROLE)]);
    let fixture = fixture("github-token-claims.json");
    let output = ci_creds(&[
        "policy",
        "explain",
        "--claims",
        arg(&fixture),
        "--role",
        "deploy",
        "--config",
        arg(&dir.path().join("config.toml")),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let config_path = dir.path().join("config.toml").display().to_string();
    assert_eq!(
        stdout(&output),
        format!(
            "mapping: issuer `gh`, kind github: iss `https://token.actions.githubusercontent.com` found in {config_path}
job: gh job 289782451, repository octo-org/octo-repo, ref refs/heads/main
runner: environment github-hosted (token)
runner tier: hosted

role deploy: granted
  allow rule 1: matches
    held    issuer: gh  (accepts gh)
    held    repository_id: 74  (accepts 74)
    held    ref: refs/heads/main  (accepts refs/heads/main)
    held    runner_tier: hosted  (accepts hosted)
  exchanges per job: at most 10 (max_exchanges_per_job)
"
        )
    );
}

#[test]
fn explain_says_what_failed_and_which_mapping_was_inferred() {
    let dir = dir_with(&[("roles.yaml", ROLE)]);
    let fixture = fixture("gitlab-token-claims.json");
    let output = ci_creds(&["policy", "explain", "--claims", arg(&fixture), arg(dir.path())]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "mapping: issuer `gitlab`, kind gitlab: inferred from the `job_project_path` claim; issuer name `gitlab` assumed (pass --config or --issuer if the broker names it differently)
job: gitlab job 302, repository my-group/my-project, ref refs/heads/feature-branch-1
runner: environment self-hosted (token), id 1 (token)
runner tier: (none)

role deploy: denied
  allow rule 1: does not match
    failed  issuer: gitlab  (accepts gh)
    failed  repository_id: 20  (accepts 74)
    failed  ref: refs/heads/feature-branch-1  (accepts refs/heads/main)
    failed  runner_tier: (in no runner tier)  (accepts hosted)
  exchanges per job: at most 10 (max_exchanges_per_job)
"
    );
}

#[test]
fn explain_says_a_circleci_ssh_rerun_is_a_dangerous_trigger() {
    let role = r#"
roles:
  - name: config
    backend: vault
    max_ttl: 15m
    vault: { policies: [config] }
    allow:
      - { issuer: circleci, repository_id: "84996744-a854-4f5e-aea3-04e2851dc1d2" }
"#;
    let mut claims: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("circleci-token-claims.json")).unwrap()).unwrap();
    claims["oidc.circleci.com/ssh-rerun"] = true.into();
    let dir = dir_with(&[("policy/roles.yaml", role), ("claims.json", &claims.to_string())]);
    let explain =
        |claims: &Path| ci_creds(&["policy", "explain", "--claims", arg(claims), arg(&dir.path().join("policy"))]);
    let output = explain(&dir.path().join("claims.json"));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let text = stdout(&output);
    assert!(
        text.ends_with(
            "role config: denied
  allow rule 1: does not match
    held    issuer: circleci  (accepts circleci)
    held    repository_id: 84996744-a854-4f5e-aea3-04e2851dc1d2  (accepts 84996744-a854-4f5e-aea3-04e2851dc1d2)
    failed  event: ssh_rerun is a dangerous trigger and the rule does not name it explicitly
  exchanges per job: at most 10 (max_exchanges_per_job)
"
        ),
        "{text}"
    );
    let ordinary = explain(&fixture("circleci-token-claims.json"));
    assert!(stdout(&ordinary).contains("role config: granted"), "{}", stdout(&ordinary));
}

#[test]
fn explain_refuses_an_iss_the_config_does_not_know() {
    let config = "[[issuers]]\nname = \"gl\"\nkind = \"gitlab\"\nissuer = \"https://gitlab.example.com\"\n";
    let dir = dir_with(&[("config.toml", config), ("roles.yaml", ROLE)]);
    let fixture = fixture("github-token-claims.json");
    let output = ci_creds(&[
        "policy",
        "explain",
        "--claims",
        arg(&fixture),
        "--config",
        arg(&dir.path().join("config.toml")),
        arg(dir.path()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("iss `https://token.actions.githubusercontent.com` is not an issuer of"), "{stderr}");
    assert!(stderr.contains("unknown_issuer"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    let output = ci_creds(&["policy", "explain", "--issuer", "gh"]);
    assert_eq!(output.status.code(), Some(2));
}
