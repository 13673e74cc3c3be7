//! `ci-creds policy check --config`, `policy explain` and `policy test` with an Azure Pipelines
//! run's claims: a rule that pins neither the project nor the pipeline is warned about once the
//! config says which issuers are Azure's; a pipeline pinned by its ids, and a tier of self-hosted
//! pools judged on the pool's environment as the build API would tell it.

use crate::policy_cli::{arg, ci_creds, dir_with, fixture, repo_policy, stdout};

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

const TIERED: &str = r#"
runner_tiers:
  - name: azure-self-hosted
    match: { issuer: azure, runner_environment: self-hosted }
roles:
  - name: deploy
    backend: vault
    max_ttl: 10m
    vault: { policies: [deploy] }
    allow:
      - issuer: azure
        owner_id: 0ca3ddd9-f0b0-4635-a98c-5866526961b6
        repository: octo-org/octo-repo
        ref: refs/heads/main
        claims: { prj_id: 271ef6f7-5998-4b0f-86fb-4b54d9129990, def_id: "12" }
  - name: release
    backend: vault
    max_ttl: 10m
    vault: { policies: [release] }
    allow:
      - issuer: azure
        owner_id: 0ca3ddd9-f0b0-4635-a98c-5866526961b6
        claims: { prj_id: 271ef6f7-5998-4b0f-86fb-4b54d9129990, def_id: "12" }
        runner_tier: azure-self-hosted
"#;

#[test]
fn test_judges_azure_runs_by_their_ids_and_their_pool() {
    let claims = std::fs::read_to_string(repo_policy().join("testdata/azure-pipelines-run.json")).unwrap();
    let tests = r#"
tests:
  - name: the pinned pipeline on main deploys, but its pool is not known to be self-hosted
    claims_file: claims.json
    issuer: azure
    kind: azure_pipelines
    granted: [deploy]
    denied: [release]
  - name: another pipeline of the project does not
    claims_file: claims.json
    claims: { def_id: "13" }
    issuer: azure
    kind: azure_pipelines
    denied: [deploy, release]
  - name: nor the same pipeline number in another project
    claims_file: claims.json
    claims: { prj_id: 8a2c0b5e-0000-4000-8000-000000000001 }
    issuer: azure
    kind: azure_pipelines
    denied: [deploy]
  - name: nor another organisation's run
    claims_file: claims.json
    claims:
      iss: https://vstoken.dev.azure.com/5e1f2a3b-7c4d-4e5f-8a9b-0c1d2e3f4a5b
      org_id: 5e1f2a3b-7c4d-4e5f-8a9b-0c1d2e3f4a5b
    issuer: azure
    kind: azure_pipelines
    denied: [deploy]
  - name: nor a pull request's validation build
    claims_file: claims.json
    claims: { rpo_ref: refs/pull/7/merge }
    issuer: azure
    kind: azure_pipelines
    denied: [deploy]
  - name: a self-hosted pool releases
    claims_file: claims.json
    issuer: azure
    kind: azure_pipelines
    runner: { environment: self-hosted, group: linux-pool, type: self-hosted }
    granted: [deploy, release]
  - name: Microsoft's hosted pool does not
    claims_file: claims.json
    issuer: azure
    kind: azure_pipelines
    runner: { environment: microsoft-hosted, group: Azure Pipelines, type: hosted }
    granted: [deploy]
    denied: [release]
"#;
    let dir = dir_with(&[("roles.yaml", TIERED), ("roles_test.yaml", tests), ("claims.json", &claims)]);
    let output = ci_creds(&["policy", "test", arg(dir.path())]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.ends_with("7 passed, 0 failed\n"), "{text}");

    // A case that expects the hosted pool to release fails, and says why.
    let wrong = r#"
tests:
  - name: Microsoft's hosted pool releases
    claims_file: claims.json
    issuer: azure
    kind: azure_pipelines
    runner: { environment: microsoft-hosted, group: Azure Pipelines }
    granted: [release]
"#;
    std::fs::write(dir.path().join("roles_test.yaml"), wrong).unwrap();
    let output = ci_creds(&["policy", "test", arg(dir.path())]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("FAILED  Microsoft's hosted pool releases"), "{text}");
    assert!(text.contains("release: expected granted, was denied: runner_tier"), "{text}");
}

#[test]
fn explain_shows_an_azure_pool_s_environment_with_its_source() {
    let dir = dir_with(&[("roles.yaml", TIERED)]);
    let claims = repo_policy().join("testdata/azure-pipelines-run.json");
    let explain = |facts: &[&str]| {
        let mut args = vec!["policy", "explain", "--claims", arg(&claims), "--issuer", "azure", "--kind"];
        args.extend(["azure_pipelines", "--role", "release"]);
        for fact in facts {
            args.extend(["--runner-fact", fact]);
        }
        args.push(arg(dir.path()));
        stdout(&ci_creds(&args))
    };
    let text = explain(&["environment=self-hosted", "group=linux-pool"]);
    assert!(text.contains("runner: environment self-hosted (given), group linux-pool (given)\n"), "{text}");
    assert!(text.contains("runner tier: azure-self-hosted\n"), "{text}");
    assert!(text.contains("role release: granted"), "{text}");
    let text = explain(&[]);
    assert!(text.contains("runner: (nothing known)\n"), "{text}");
    assert!(text.contains("role release: denied"), "{text}");
}
