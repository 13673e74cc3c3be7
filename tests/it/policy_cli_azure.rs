//! `ci-creds policy check --config` and `policy explain` with an Azure Pipelines run's claims:
//! a rule that pins neither the project nor the pipeline is warned about once the config says
//! which issuers are Azure's.

use crate::policy_cli::{arg, ci_creds, dir_with, fixture, stdout};

const CONFIG: &str = "policy_dir = \"policy\"\n[[issuers]]\nname = \"azure\"\nkind = \"azure_pipelines\"\nissuer = \"https://vstoken.dev.azure.com/0ca3ddd9-f0b0-4635-a98c-5866526961b6\"\n";

const ROLES: &str = r#"
roles:
  - name: deploy
    backend: vault
    max_ttl: 10m
    vault: { policies: [deploy] }
    allow:
      - issuer: azure
        repository: octo-org/octo-repo
        ref: refs/heads/main
        claims: { prj_id: 271ef6f7-5998-4b0f-86fb-4b54d9129990, def_id: "12" }
  - name: loose
    backend: vault
    max_ttl: 10m
    vault: { policies: [loose] }
    allow:
      - issuer: azure
        repository: octo-org/octo-repo
        ref: refs/heads/main
"#;

#[test]
fn check_with_the_config_warns_on_an_azure_rule_that_pins_no_ids() {
    let dir = dir_with(&[("config.toml", CONFIG), ("policy/roles.yaml", ROLES)]);
    let output = ci_creds(&["policy", "check", "--config", arg(&dir.path().join("config.toml"))]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let warnings: Vec<&str> = text.lines().filter(|line| line.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0].contains(
            "role `loose`, allow rule 1: this Azure Pipelines rule pins neither the project nor the pipeline"
        )
    );
}

#[test]
fn explain_infers_azure_pipelines_and_judges_the_run() {
    let dir = dir_with(&[("roles.yaml", ROLES)]);
    let claims = fixture("azure-pipelines-token-claims.json");
    let output = ci_creds(&[
        "policy",
        "explain",
        "--claims",
        arg(&claims),
        "--issuer",
        "azure",
        "--kind",
        "azure_pipelines",
        "--role",
        "deploy",
        arg(dir.path()),
    ]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.contains("job: azure job 4711, repository octo-org/octo-repo, ref refs/heads/main"), "{text}");
    assert!(text.contains("role deploy: granted"), "{text}");
    let inferred = ci_creds(&["policy", "explain", "--claims", arg(&claims), arg(dir.path())]);
    assert!(
        stdout(&inferred).starts_with("mapping: issuer `azure_pipelines`, kind azure_pipelines: inferred from iss")
    );
}
