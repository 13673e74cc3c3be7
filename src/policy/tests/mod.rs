//! Table-driven policy tests: jobs modelled on `tests/fixtures/*-token-claims.json`, each case
//! changing one thing.

mod allow_issuer;
mod aws_roles;
mod binding;
mod binding_aws;
mod deciding;
mod explaining;
mod github_roles;
mod linting;
mod loading;
mod matching;
mod runner_facts;

use serde_json::{Value, json};

use super::{Decision, PolicyFile, PolicySet};
use crate::ci::CiKind;
use crate::ci::{FactSource, Job, RunnerKey, Sourced};

/// A runner fact as a signed claim tells it.
fn token_fact(value: &str) -> Option<Sourced<String>> {
    Some(Sourced::new(value.to_owned(), FactSource::Token))
}

/// A GitHub Actions job shaped like `github-token-claims.json`.
fn github_job() -> Job {
    let mut job = Job::new("github", "289782451", "octo-org/octo-repo");
    job.kind = Some(CiKind::Github);
    job.runner_key_by = RunnerKey::IdAndName;
    job.run_id = Some("example-run-id".into());
    job.run_attempt = Some("2".into());
    job.repository_id = Some("74".into());
    job.owner = Some("octo-org".into());
    job.owner_id = Some("65".into());
    job.git_ref = Some("refs/heads/main".into());
    job.ref_type = Some("branch".into());
    job.environment = Some("prod".into());
    job.event = Some("workflow_dispatch".into());
    job.workflow_ref = Some("octo-org/octo-repo/.github/workflows/deploy.yml@refs/heads/main".into());
    job.job_workflow_ref = Some("octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main".into());
    job.runner_environment = Some("github-hosted".into());
    job.token_id = "example-id".into();
    job.expires_at = 1632493867;
    job.claims = claims(json!({
        "jti": "example-id",
        "sub": "repo:octo-org/octo-repo:environment:prod",
        "environment": "prod",
        "ref": "refs/heads/main",
        "repository": "octo-org/octo-repo",
        "repository_owner": "octo-org",
        "actor_id": "12",
        "repository_id": "74",
        "repository_owner_id": "65",
        "runner_environment": "github-hosted",
        "actor": "octocat",
        "event_name": "workflow_dispatch",
        "ref_type": "branch",
        "iss": "https://token.actions.githubusercontent.com",
        "exp": 1632493867
    }));
    job
}

/// A GitLab CI job shaped like `gitlab-token-claims.json`.
fn gitlab_job() -> Job {
    let mut job = Job::new("gitlab", "302", "my-group/my-project");
    job.kind = Some(CiKind::Gitlab);
    job.runner_key_by = RunnerKey::Manager;
    job.run_id = Some("574".into());
    job.repository_id = Some("20".into());
    job.owner = Some("my-group".into());
    job.owner_id = Some("72".into());
    job.git_ref = Some("refs/heads/feature-branch-1".into());
    job.ref_type = Some("branch".into());
    job.ref_protected = Some(false);
    job.environment = Some("test-environment2".into());
    job.environment_protected = Some(false);
    job.event = Some("push".into());
    job.runner_environment = Some("self-hosted".into());
    job.runner.id = token_fact("1");
    job.token_id = "235b3a54-b797-45c7-ae9a-f72d7bc6ef5b".into();
    job.expires_at = 1681398793;
    job.claims = claims(json!({
        "namespace_id": "72",
        "namespace_path": "my-group",
        "project_id": "20",
        "project_path": "my-group/my-project",
        "job_project_path": "my-group/my-project",
        "pipeline_source": "push",
        "ref": "feature-branch-1",
        "ref_protected": "false",
        "groups_direct": ["mygroup/mysubgroup", "myothergroup/myothersubgroup"],
        "runner_id": 1,
        "runner_environment": "self-hosted",
        "user_login": "sample-user",
        "iss": "https://gitlab.example.com",
        "sub": "project_path:my-group/my-project:ref_type:branch:ref:feature-branch-1"
    }));
    job
}

fn claims(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("test claims are an object literal"),
    }
}

fn parse(text: &str) -> PolicySet {
    PolicySet::parse(&[PolicyFile { path: "policy.yaml", text }])
        .unwrap_or_else(|e| panic!("test policy must load: {e}\n{text}"))
}

/// A policy with one vault role `r` whose `allow:` and `deny:` lists are the given YAML flow
/// sequences, after the given runner tiers.
fn role_policy(tiers: &str, allow: &str, deny: &str) -> String {
    format!(
        "runner_tiers: {tiers}\nroles:\n  - name: r\n    backend: vault\n    max_ttl: 15m\n    vault: {{ policies: [p] }}\n    allow: {allow}\n    deny: {deny}\n"
    )
}

/// `Ok(())` when every requested role is granted, else each refused role with its reasons.
fn decide(set: &PolicySet, job: &Job, requested: &[&str]) -> Result<Vec<String>, Vec<(String, Vec<String>)>> {
    let requested: Vec<String> = requested.iter().map(|r| (*r).to_owned()).collect();
    match set.decide(job, &requested) {
        Decision::Granted(roles) => Ok(roles.iter().map(|r| r.name.clone()).collect()),
        Decision::Denied(denials) => Err(denials.into_iter().map(|d| (d.role, d.reasons)).collect()),
    }
}

/// The reasons role `r` is refused, or empty when it is granted.
fn reasons_for_r(set: &PolicySet, job: &Job) -> Vec<String> {
    match decide(set, job, &["r"]) {
        Ok(_) => Vec::new(),
        Err(denials) => denials.into_iter().flat_map(|(_, reasons)| reasons).collect(),
    }
}

fn with(mut job: Job, change: impl FnOnce(&mut Job)) -> Job {
    change(&mut job);
    job
}

fn with_claim(mut job: Job, name: &str, value: &str) -> Job {
    job.claims.insert(name.into(), json!(value));
    job
}
