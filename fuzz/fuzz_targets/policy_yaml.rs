//! A policy file through `PolicySet::parse`, then lint, decisions and explanations for a few
//! jobs on every role it defines: globs and conditions are compiled at parse and run at decide.
#![no_main]

use std::sync::LazyLock;

use ci_creds::identity::job_from_claims;
use ci_creds::ci::{FactSource, Job, Sourced};
use ci_creds::ci::CiKind;
use ci_creds::policy::{PolicyFile, PolicySet};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

static JOBS: LazyLock<Vec<Job>> = LazyLock::new(|| {
    let github = json!({
        "check_run_id": "22", "repository": "octo-org/octo-repo", "repository_id": "74",
        "repository_owner": "octo-org", "repository_owner_id": "65", "ref": "refs/heads/main",
        "ref_type": "branch", "environment": "prod", "event_name": "push", "actor": "octocat",
        "workflow_ref": "octo-org/octo-repo/.github/workflows/deploy.yml@refs/heads/main",
        "runner_environment": "github-hosted", "exp": 1_900_000_000,
    });
    let pull_request_target = json!({
        "check_run_id": "23", "repository": "octo-org/octo-repo", "ref": "refs/heads/release/v1",
        "event_name": "pull_request_target", "runner_environment": "self-hosted",
    });
    let gitlab_fork = json!({
        "job_id": "302", "job_project_path": "mygroup/myproject", "job_project_id": "22",
        "project_path": "someone/myproject-fork", "namespace_path": "mygroup", "namespace_id": "72",
        "ref": "main", "ref_type": "branch", "ref_protected": "true", "pipeline_source": "push",
        "runner_id": 12, "runner_environment": "self-hosted",
    });
    [
        (CiKind::Github, "github", github),
        (CiKind::Github, "github", pull_request_target),
        (CiKind::Gitlab, "gitlab", gitlab_fork),
    ]
    .into_iter()
    .map(|(kind, issuer, claims)| job_from_claims(kind, issuer, claims).expect("a job"))
    .chain(std::iter::once(self_hosted_github()))
    .collect()
});

/// A GitHub job on a self-hosted runner the CI's API described, as an exchange would see it.
fn self_hosted_github() -> Job {
    let claims = json!({
        "check_run_id": "24", "repository": "octo-org/octo-repo", "repository_id": "74",
        "ref": "refs/heads/main", "event_name": "push", "runner_environment": "self-hosted",
    });
    let mut job = job_from_claims(CiKind::Github, "github", claims).expect("a job");
    let told = |value: &str| Some(Sourced::new(value.to_owned(), FactSource::CiApi));
    job.runner.id = told("42");
    job.runner.name = told("eph-42");
    job.runner.group = told("ephemeral");
    job.runner.labels = Some(Sourced::new(vec!["self-hosted".into(), "Linux".into()], FactSource::CiApi));
    job
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let set = match PolicySet::parse(&[PolicyFile { path: "fuzz.yaml", text }]) {
        Ok(set) => set,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let _ = set.lint(&Default::default());
    let mut roles: Vec<String> = set.roles().map(|role| role.name.clone()).collect();
    roles.push("undefined-role".into());
    for job in JOBS.iter() {
        let _ = set.tier(job);
        let _ = set.wants_runner_facts(job, &roles);
        let _ = job.runner_key();
        let _ = set.decide(job, &roles);
        for role in &roles {
            let _ = set.explain(job, role);
        }
    }
});
