//! Whole decisions: deny rules, several allow rules, several roles, dangerous triggers, and
//! what a refusal may reveal.

use serde_json::json;

use super::{decide, github_job, gitlab_job, parse, reasons_for_r, role_policy, with, with_claim};
use crate::ci::{DangerousTrigger, Job};
use crate::policy::RoleDenial;

const TWO_ROLES: &str = r#"
roles:
  - name: deploy-prod
    backend: vault
    max_ttl: 15m
    vault: { policies: [deploy-prod] }
    allow:
      - { issuer: github, repository: octo-org/octo-repo, ref: refs/heads/main, environment: prod }
  - name: read-only
    backend: vault
    max_ttl: 1h
    vault: { policies: [read] }
    allow:
      - { issuer: github, owner: octo-org }
  - name: nobody
    backend: vault
    max_ttl: 900s
    vault: { policies: [none] }
"#;

type Outcome = Result<Vec<&'static str>, Vec<(&'static str, Vec<&'static str>)>>;

fn owned(outcome: Outcome) -> Result<Vec<String>, Vec<(String, Vec<String>)>> {
    let strings = |v: Vec<&str>| v.into_iter().map(str::to_owned).collect::<Vec<_>>();
    outcome
        .map(strings)
        .map_err(|denials| denials.into_iter().map(|(role, reasons)| (role.to_owned(), strings(reasons))).collect())
}

#[test]
fn requested_roles_are_all_or_none() {
    let set = parse(TWO_ROLES);
    let dev = || {
        let mut job = github_job();
        job.git_ref = Some("refs/heads/dev".into());
        job
    };
    let cases: Vec<(&str, Job, &[&str], Outcome)> = vec![
        ("both granted", github_job(), &["deploy-prod", "read-only"], Ok(vec!["deploy-prod", "read-only"])),
        (
            "one refused refuses the request",
            dev(),
            &["read-only", "deploy-prod"],
            Err(vec![("deploy-prod", vec!["ref: refs/heads/dev is not one of the allowed values"])]),
        ),
        (
            "repeats are judged once, first-seen order kept",
            github_job(),
            &["read-only", "deploy-prod", "read-only", "deploy-prod"],
            Ok(vec!["read-only", "deploy-prod"]),
        ),
        (
            "an unknown role is refused, once",
            github_job(),
            &["read-only", "ghost", "ghost"],
            Err(vec![("ghost", vec!["role is not defined"])]),
        ),
        (
            "each refused role is listed",
            dev(),
            &["ghost", "deploy-prod", "deploy-prod", "nobody"],
            Err(vec![
                ("ghost", vec!["role is not defined"]),
                ("deploy-prod", vec!["ref: refs/heads/dev is not one of the allowed values"]),
                ("nobody", vec!["role has no allow rule"]),
            ]),
        ),
        ("nothing requested, nothing granted", github_job(), &[], Ok(vec![])),
    ];
    for (name, job, requested, expected) in cases {
        assert_eq!(decide(&set, &job, requested), owned(expected), "case: {name}");
    }
}

#[test]
fn deny_rules_override_allow() {
    let allow = "[ { issuer: github, repository: octo-org/octo-repo } ]";
    let deny = r#"[ { claims: { actor: "dependabot[bot]" } }, { ref: "glob:refs/heads/tmp/*", event: push } ]"#;
    let set = parse(&role_policy("[]", allow, deny));
    let cases: Vec<(&str, Job, &[&str])> = vec![
        ("no deny rule matches", github_job(), &[]),
        (
            "first deny rule matches",
            with_claim(github_job(), "actor", "dependabot[bot]"),
            &["denied by deny rule 1 (claims.actor)"],
        ),
        (
            "second deny rule needs all its conditions",
            with(github_job(), |j| j.git_ref = Some("refs/heads/tmp/x".into())),
            &[],
        ),
        (
            "second deny rule matches",
            with(github_job(), |j| {
                j.git_ref = Some("refs/heads/tmp/x".into());
                j.event = Some("push".into());
            }),
            &["denied by deny rule 2 (ref, event)"],
        ),
        (
            "a deny rule applies even to a dangerous trigger it does not name",
            with(with_claim(github_job(), "actor", "dependabot[bot]"), |j| {
                j.dangerous_trigger = Some(DangerousTrigger::Event("workflow_dispatch".into()));
            }),
            &["denied by deny rule 1 (claims.actor)"],
        ),
    ];
    for (name, job, reasons) in cases {
        assert_eq!(reasons_for_r(&set, &job), reasons, "case: {name}");
    }
}

#[test]
fn several_allow_rules_are_any_of_and_explained_per_rule() {
    let allow = r#"[ { issuer: github, ref: refs/heads/main, environment: prod }, { issuer: github, ref: "glob:refs/tags/v*" } ]"#;
    let set = parse(&role_policy("[]", allow, "[]"));
    let cases: Vec<(&str, Job, &[&str])> = vec![
        ("first rule holds", github_job(), &[]),
        ("second rule holds", with(github_job(), |j| j.git_ref = Some("refs/tags/v1".into())), &[]),
        (
            "neither holds",
            with(github_job(), |j| {
                j.git_ref = Some("refs/heads/dev".into());
                j.environment = None;
            }),
            &[
                "allow rule 1: ref: refs/heads/dev is not one of the allowed values",
                "allow rule 1: environment: the token has no such claim",
                "allow rule 2: ref: refs/heads/dev is not one of the allowed values",
            ],
        ),
    ];
    for (name, job, reasons) in cases {
        assert_eq!(reasons_for_r(&set, &job), reasons, "case: {name}");
    }
}

fn pull_request_target() -> Job {
    with(github_job(), |j| {
        j.event = Some("pull_request_target".into());
        j.dangerous_trigger = Some(DangerousTrigger::Event("pull_request_target".into()));
    })
}

#[test]
fn dangerous_event_needs_a_literal_rule() {
    const REFUSED: &str = "event: pull_request_target is a dangerous trigger and the rule does not name it explicitly";
    let cases: Vec<(&str, &str, &[&str])> = vec![
        (
            "named literally",
            "[ { issuer: github, repository: octo-org/octo-repo, event: [push, pull_request_target] } ]",
            &[],
        ),
        ("no event condition", "[ { issuer: github, repository: octo-org/octo-repo } ]", &[REFUSED]),
        ("only a glob matches", r#"[ { issuer: github, event: "glob:pull_request*" } ]"#, &[REFUSED]),
        ("a catch-all glob", r#"[ { issuer: github, event: ["glob:*", push] } ]"#, &[REFUSED]),
        (
            "event not allowed at all says so once",
            "[ { issuer: github, event: push } ]",
            &["event: pull_request_target is not one of the allowed values"],
        ),
        (
            "the other rule names it",
            "[ { issuer: github, repository: octo-org/octo-repo }, { issuer: github, event: pull_request_target } ]",
            &[],
        ),
    ];
    for (name, allow, reasons) in cases {
        let set = parse(&role_policy("[]", allow, "[]"));
        assert_eq!(reasons_for_r(&set, &pull_request_target()), reasons, "case: {name}");
    }
}

/// A CircleCI job rerun with SSH, as `ci::circleci` maps it.
fn ssh_rerun() -> Job {
    let mut job = Job::new("circleci", "8b91f9a8-7975-4e60-916c-f0152ccbc937", "github.com/circleci/webhook-service");
    job.kind = Some(crate::ci::CiKind::Circleci);
    job.git_ref = Some("refs/heads/main".into());
    job.event = Some("ssh_rerun".into());
    job.dangerous_trigger = Some(DangerousTrigger::Event("ssh_rerun".into()));
    job
}

#[test]
fn a_circleci_ssh_rerun_needs_a_rule_naming_it() {
    const REFUSED: &str = "event: ssh_rerun is a dangerous trigger and the rule does not name it explicitly";
    let cases: Vec<(&str, &str, &[&str])> = vec![
        ("named literally", "[ { issuer: circleci, event: ssh_rerun } ]", &[]),
        ("its repository and branch only", "[ { issuer: circleci, ref: refs/heads/main } ]", &[REFUSED]),
        ("only a glob matches", r#"[ { issuer: circleci, event: "glob:ssh*" } ]"#, &[REFUSED]),
    ];
    for (name, allow, reasons) in cases {
        let set = parse(&role_policy("[]", allow, "[]"));
        assert_eq!(reasons_for_r(&set, &ssh_rerun()), reasons, "case: {name}");
    }
    let set = parse(&role_policy("[]", "[ { issuer: circleci, ref: refs/heads/main } ]", "[]"));
    let ordinary = with(ssh_rerun(), |j| (j.event, j.dangerous_trigger) = (None, None));
    assert_eq!(reasons_for_r(&set, &ordinary), Vec::<String>::new(), "the same job without SSH is granted");
}

fn fork_pipeline() -> Job {
    with(gitlab_job(), |j| {
        j.claims.insert("project_path".into(), json!("fork-owner/my-project"));
        j.dangerous_trigger = Some(DangerousTrigger::ForeignClaim {
            claim: "project_path",
            value: "fork-owner/my-project".into(),
            why: "is not the job's own project (e.g. a fork's pipeline)",
        });
    })
}

#[test]
fn foreign_project_needs_a_literal_project_path() {
    const REFUSED: &str = "claims.project_path: fork-owner/my-project is not the job's own project (e.g. a fork's pipeline) and the rule does not name it explicitly";
    let cases: Vec<(&str, &str, &[&str])> = vec![
        ("named literally", "[ { issuer: gitlab, claims: { project_path: fork-owner/my-project } } ]", &[]),
        ("only the job's own project named", "[ { issuer: gitlab, repository: my-group/my-project } ]", &[REFUSED]),
        ("only a glob matches", r#"[ { issuer: gitlab, claims: { project_path: "glob:fork-owner/*" } } ]"#, &[REFUSED]),
        (
            "another project named",
            "[ { issuer: gitlab, claims: { project_path: my-group/my-project } } ]",
            &["claims.project_path: fork-owner/my-project is not one of the allowed values"],
        ),
    ];
    for (name, allow, reasons) in cases {
        let set = parse(&role_policy("[]", allow, "[]"));
        assert_eq!(reasons_for_r(&set, &fork_pipeline()), reasons, "case: {name}");
    }
}

#[test]
fn reasons_never_reveal_expected_values() {
    let allow = r#"[ { issuer: [github, gitlab], ref: refs/heads/secret-branch, environment: secret-env },
                     { issuer: [github, gitlab], ref: "glob:refs/heads/secret-*", claims: { actor: secret-actor, groups: secret-group } },
                     { issuer: [github, gitlab], event: secret-event, runner_tier: secret-tier } ]"#;
    let deny = "[ { claims: { actor: secret-deny-actor } }, { repository: secret-repo } ]";
    let tiers = "[ { name: hosted, match: { runner_environment: secret-runner } } ]";
    let set = parse(&role_policy(tiers, allow, deny));
    let jobs = [
        github_job(),
        gitlab_job(),
        pull_request_target(),
        fork_pipeline(),
        with_claim(github_job(), "actor", "secret-deny-actor"),
        with(github_job(), |j| {
            j.claims.insert("groups".into(), json!(["a", "b"]));
        }),
        Job::new("x", "1", "y"),
    ];
    for job in &jobs {
        let reasons = reasons_for_r(&set, job);
        assert!(!reasons.is_empty(), "job must be refused: {job:?}");
        for reason in &reasons {
            assert!(!reason.contains("secret"), "reason leaks a policy value: {reason}");
        }
    }
}

#[test]
fn role_denial_serializes_as_the_api_returns_it() {
    let denial = RoleDenial { role: "deploy-prod".into(), reasons: vec!["role is not defined".into()] };
    let json = serde_json::to_value(&denial).unwrap_or_default();
    assert_eq!(json, json!({ "role": "deploy-prod", "reasons": ["role is not defined"] }));
}

#[test]
fn granted_roles_carry_their_scope() {
    let set = parse(TWO_ROLES);
    let role = set.role("deploy-prod").map(|r| (r.max_ttl.as_secs(), r.vault.clone().map(|v| v.policies)));
    assert_eq!(role, Some((900, Some(vec!["deploy-prod".to_owned()]))));
    let names: Vec<&str> = set.roles().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["deploy-prod", "read-only", "nobody"]);
    assert!(set.role("ghost").is_none());
}
