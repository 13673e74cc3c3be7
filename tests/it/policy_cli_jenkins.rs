//! `ci-creds policy explain` and `policy test` with a Jenkins build's claims: the build mapped as
//! the broker maps it, `job_name` pinning one job, and a change request refused by default.

use crate::policy_cli::{arg, ci_creds, dir_with, fixture, stdout};

const ROLES: &str = r#"
roles:
  - name: deploy
    backend: vault
    max_ttl: 10m
    vault: { policies: [deploy] }
    allow:
      - issuer: jenkins
        job_name: octo-org/octo-repo/main
        ref: refs/heads/main
  - name: preview
    backend: vault
    max_ttl: 10m
    vault: { policies: [preview] }
    allow:
      - issuer: jenkins
        job_name: "glob:octo-org/octo-repo/*"
        event: [change_request]
"#;

const CONFIG: &str = "[[issuers]]\nname = \"jenkins\"\nkind = \"jenkins\"\nissuer = \"https://jenkins.example.com/oidc\"\n[issuers.claim_names]\nnode_name = \"agent\"\n";

#[test]
fn explain_maps_a_build_through_the_config_s_claim_names() {
    let dir = dir_with(&[("config.toml", CONFIG), ("roles.yaml", ROLES)]);
    let mut claims: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("jenkins-token-claims.json")).unwrap()).unwrap();
    claims["agent"] = "linux-agent-1".into();
    std::fs::write(dir.path().join("claims.json"), claims.to_string()).unwrap();
    let output = ci_creds(&[
        "policy",
        "explain",
        "--claims",
        arg(&dir.path().join("claims.json")),
        "--role",
        "deploy",
        "--config",
        arg(&dir.path().join("config.toml")),
        arg(dir.path()),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0]
            .starts_with("mapping: issuer `jenkins`, kind jenkins: iss `https://jenkins.example.com/oidc` found in")
    );
    assert_eq!(
        lines[1],
        "job: jenkins job octo-org/octo-repo/main#42, repository octo-org/octo-repo, ref refs/heads/main"
    );
    assert_eq!(lines[2], "runner: environment self-hosted (token), name linux-agent-1 (token)");
    assert!(text.contains("role deploy: granted"), "{text}");
    assert!(text.contains("held    job_name: octo-org/octo-repo/main  (accepts octo-org/octo-repo/main)"), "{text}");
}

#[test]
fn test_pins_one_job_and_refuses_a_change_request_unless_a_rule_names_it() {
    let claims = std::fs::read_to_string(fixture("jenkins-token-claims.json")).unwrap();
    let tests = r#"
tests:
  - name: the main branch job deploys
    claims_file: claims.json
    issuer: jenkins
    kind: jenkins
    granted: [deploy]
    denied: [preview]
  - name: the same job in another folder does not
    claims_file: claims.json
    claims: { sub: "https://jenkins.example.com/job/other-org/job/octo-repo/job/main/" }
    issuer: jenkins
    kind: jenkins
    denied: [deploy, preview]
  - name: a change request gets the preview role only
    claims_file: claims.json
    claims:
      sub: "https://jenkins.example.com/job/octo-org/job/octo-repo/job/PR-7/"
      branch: PR-7
      change_id: "7"
    issuer: jenkins
    kind: jenkins
    granted: [preview]
    denied: [deploy]
"#;
    let dir = dir_with(&[("roles.yaml", ROLES), ("roles_test.yaml", tests), ("claims.json", &claims)]);
    let output = ci_creds(&["policy", "test", arg(dir.path())]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.ends_with("3 passed, 0 failed\n"), "{text}");
}

#[test]
fn explain_infers_jenkins_from_its_claims() {
    let dir = dir_with(&[("roles.yaml", ROLES)]);
    let output =
        ci_creds(&["policy", "explain", "--claims", arg(&fixture("jenkins-token-claims.json")), arg(dir.path())]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let text = stdout(&output);
    assert!(
        text.starts_with("mapping: issuer `jenkins`, kind jenkins: inferred from the `build_number` claim"),
        "{text}"
    );
}

#[test]
fn check_warns_of_ref_and_event_rules_for_a_jenkins_issuer_without_its_api() {
    let with_api = format!(
        "{CONFIG}[ci_api.jenkins]\napi_url = \"https://jenkins.example.com\"\nuser = \"ci-creds\"\ntoken_env = \"JENKINS_API_TOKEN\"\n"
    );
    let dir = dir_with(&[("config.toml", CONFIG), ("with-api.toml", &with_api), ("roles.yaml", ROLES)]);
    let check = |config: &str| {
        let output = ci_creds(&["policy", "check", "--config", arg(&dir.path().join(config)), arg(dir.path())]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        stdout(&output)
    };
    let text = check("config.toml");
    for (role, field) in [("deploy", "ref"), ("preview", "event")] {
        let expected =
            format!("role `{role}`, allow rule 1: the rule conditions `{field}` for Jenkins issuer(s) jenkins");
        assert!(text.contains(&expected), "{text}");
    }
    assert!(!check("with-api.toml").contains("Jenkins issuer(s)"));
}

#[test]
fn explain_says_why_a_build_without_a_branch_claim_has_no_ref() {
    let dir = dir_with(&[("config.toml", CONFIG), ("roles.yaml", ROLES)]);
    let mut claims: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("jenkins-token-claims.json")).unwrap()).unwrap();
    claims.as_object_mut().unwrap().remove("branch");
    std::fs::write(dir.path().join("claims.json"), claims.to_string()).unwrap();
    let claims_path = dir.path().join("claims.json");
    let config = dir.path().join("config.toml");
    let args = ["policy", "explain", "--claims", arg(&claims_path), "--role", "deploy", "--config", arg(&config)];
    let output = ci_creds(&[&args[..], &[arg(dir.path())]].concat());
    let text = stdout(&output);
    assert!(text.contains("role deploy: denied"), "{text}");
    assert!(text.contains("ref unknown: the token has no `branch` claim, and only the Jenkins API"), "{text}");
    // The failing condition points at that reason, not at the token.
    assert!(text.contains("failed  ref: (unknown: see `ref unknown` above)"), "{text}");
    assert!(!text.contains("(not in the token)"), "{text}");
}
