//! `ci-creds policy check|explain` on roles with `bind_to_address`: what cannot be bound is an
//! error with its reason, and `explain` says what a granted role's credentials are bound to.

use crate::policy_cli::{arg, ci_creds, dir_with, fixture, stdout};

const BOUND_VAULT: &str = r#"
roles:
  - name: deploy
    backend: vault
    max_ttl: 15m
    bind_to_address: true
    bind_prefix: 24
    vault: { policies: [deploy] }
    allow:
      - { issuer: gh, repository_id: "74" }
"#;

#[test]
fn check_refuses_a_bound_github_role_and_a_bound_dynamic_secret_with_their_reasons() {
    let github = "roles:\n  - name: release\n    backend: github\n    max_ttl: 1h\n    bind_to_address: true\n    github: { owner: octo-org, repositories: [octo-repo], permissions: { contents: write } }\n    allow: [ { issuer: gh, repository_id: \"74\" } ]\n";
    let dynamic = "roles:\n  - name: db\n    backend: vault\n    max_ttl: 15m\n    bind_to_address: true\n    vault: { policies: [db], secret_path: database/creds/readonly }\n    allow: [ { issuer: gh, repository_id: \"74\" } ]\n";
    let dir = dir_with(&[("github.yaml", github), ("db.yaml", dynamic), ("ok.yaml", BOUND_VAULT)]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("role `release`: `bind_to_address` cannot hold for a github role"), "{text}");
    assert!(text.contains("GitHub App installation tokens cannot be bound to an address"), "{text}");
    assert!(text.contains("role `db`: `bind_to_address` cannot hold with `vault.secret_path`"), "{text}");
    assert!(text.contains("reads the dynamic secret with the job's token from its own address"), "{text}");
    assert!(text.contains("2 error(s)"), "the bound vault role without a secret passes: {text}");
}

#[test]
fn check_refuses_a_prefix_that_binds_to_a_whole_network() {
    let dir = dir_with(&[("p.yaml", &BOUND_VAULT.replace("bind_prefix: 24", "bind_prefix: 0"))]);
    let output = ci_creds(&["policy", "check", arg(dir.path())]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("`bind_prefix` 0 is not between 8 and 32"), "{}", stdout(&output));
}

#[test]
fn explain_says_what_a_bound_roles_credentials_are_bound_to() {
    let config = "listen = \"127.0.0.1:1\"\naudience = \"a\"\npolicy_dir = \"policy\"\n[store]\nurl = \"sqlite://x.db\"\n[[issuers]]\nname = \"gh\"\nkind = \"github\"\nissuer = \"https://token.actions.githubusercontent.com\"\n[vault]\naddress = \"http://127.0.0.1:1\"\ntoken_env = \"UNSET_VAULT_TOKEN_VAR\"\n";
    let dir = dir_with(&[("config.toml", config), ("policy/roles.yaml", BOUND_VAULT)]);
    let claims = fixture("github-token-claims.json");
    let output = ci_creds(&[
        "policy",
        "explain",
        "--claims",
        arg(&claims),
        "--role",
        "deploy",
        "--config",
        arg(&dir.path().join("config.toml")),
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        text.contains(
            "role deploy: granted\n  credentials bound to the job's address block: /24 (IPv4), /128 (IPv6)\n"
        ),
        "{text}"
    );
}
