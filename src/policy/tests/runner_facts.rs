//! Conditions on runner facts the token may not carry: each reads the fact whatever told it,
//! is false when nobody did (with the reason why), and a decision says when it needs one.

use super::{github_job, gitlab_job, parse, reasons_for_r, role_policy, with};
use crate::ci::{FactSource, Job, Sourced};

fn told(value: &str, source: FactSource) -> Option<Sourced<String>> {
    Some(Sourced::new(value.to_owned(), source))
}

/// A job whose token says nothing of its runner's environment, with `environment` as told.
fn azure_like(environment: Option<Sourced<String>>) -> Job {
    with(github_job(), |j| {
        j.runner_environment = None;
        j.runner.environment = environment;
    })
}

fn labelled(labels: &[&str]) -> Job {
    with(github_job(), |j| {
        j.runner.labels = Some(Sourced::new(labels.iter().map(|l| (*l).to_owned()).collect(), FactSource::CiApi))
    })
}

#[test]
fn runner_fact_conditions() {
    let release = with(github_job(), |j| j.runner.group = told("release", FactSource::Webhook));
    let cases: Vec<(&str, &str, Job, &[&str])> = vec![
        ("a group the CI told", "{ issuer: github, runner_group: release }", release.clone(), &[]),
        (
            "another group",
            "{ issuer: github, runner_group: release }",
            with(github_job(), |j| j.runner.group = told("default", FactSource::CiApi)),
            &["runner_group: default is not one of the allowed values"],
        ),
        (
            "a group nobody told, with why",
            "{ issuer: github, runner_group: release }",
            with(github_job(), |j| j.runner.unavailable = Some("the CI's API did not answer: HTTP 503".into())),
            &["runner_group unknown: the CI's API did not answer: HTTP 503"],
        ),
        (
            "a ref nobody could tell, with why (a Jenkins build without the API)",
            "{ issuer: github, ref: refs/heads/main }",
            with(github_job(), |j| {
                j.git_ref = None;
                j.ref_unknown = Some("no `branch` claim, and no Jenkins API".into());
            }),
            &["ref unknown: no `branch` claim, and no Jenkins API"],
        ),
        (
            "a ref absent without a reason is only absent",
            "{ issuer: github, ref: refs/heads/main }",
            with(github_job(), |j| j.git_ref = None),
            &["ref: the token has no such claim"],
        ),
        (
            "a runner name by anchored glob",
            r#"{ issuer: github, runner_name: "glob:release-runner-*" }"#,
            with(github_job(), |j| j.runner.name = told("release-runner-5", FactSource::CiApi)),
            &[],
        ),
        (
            "a glob's * does not cross /",
            r#"{ issuer: github, runner_name: "glob:release/*" }"#,
            with(github_job(), |j| j.runner.name = told("release/a/b", FactSource::CiApi)),
            &["runner_name: release/a/b is not one of the allowed values"],
        ),
        (
            "labels: every listed one present",
            "{ issuer: github, runner_labels: [self-hosted, linux] }",
            labelled(&["self-hosted", "linux", "x64"]),
            &[],
        ),
        (
            "labels ignore case, as GitHub does",
            "{ issuer: github, runner_labels: [Linux] }",
            labelled(&["self-hosted", "LINUX"]),
            &[],
        ),
        (
            "labels: one listed is absent",
            "{ issuer: github, runner_labels: [linux, gpu] }",
            labelled(&["self-hosted", "linux"]),
            &["runner_labels: [self-hosted, linux] lacks a label the rule requires"],
        ),
        (
            "GitLab's runner type",
            "{ issuer: gitlab, runner_type: [instance_type, group_type] }",
            with(gitlab_job(), |j| j.runner.runner_type = told("project_type", FactSource::CiApi)),
            &["runner_type: project_type is not one of the allowed values"],
        ),
        (
            "GitLab's runner manager",
            "{ issuer: gitlab, runner_manager: s_7c3b2a1f9e04 }",
            with(gitlab_job(), |j| j.runner.manager = told("s_7c3b2a1f9e04", FactSource::CiApi)),
            &[],
        ),
        (
            "an environment the CI's API told, where the token has none (an Azure pool)",
            "{ issuer: github, runner_environment: self-hosted }",
            azure_like(told("self-hosted", FactSource::CiApi)),
            &[],
        ),
        (
            "a Microsoft-hosted pool is not self-hosted",
            "{ issuer: github, runner_environment: self-hosted }",
            azure_like(told("microsoft-hosted", FactSource::CiApi)),
            &["runner_environment: microsoft-hosted is not one of the allowed values"],
        ),
        (
            "an environment nobody told is a runner fact unknown, not a claim missing",
            "{ issuer: github, runner_environment: self-hosted }",
            azure_like(None),
            &["runner_environment unknown: neither the token, the CI's API nor a webhook told it"],
        ),
        (
            "the token's claim beats what the CI's API told",
            "{ issuer: github, runner_environment: self-hosted }",
            with(github_job(), |j| j.runner.environment = told("self-hosted", FactSource::CiApi)),
            &["runner_environment: github-hosted is not one of the allowed values"],
        ),
        (
            "Buildkite's queue",
            "{ issuer: gitlab, runner_queue: deploy }",
            with(gitlab_job(), |j| j.runner.queue = told("deploy", FactSource::Token)),
            &[],
        ),
    ];
    for (name, rule, job, reasons) in cases {
        let set = parse(&role_policy("[]", &format!("[ {rule} ]"), "[]"));
        assert_eq!(reasons_for_r(&set, &job), reasons, "case: {name}");
    }
}

#[test]
fn a_fact_from_a_stronger_source_wins_a_merge() {
    let mut runner = github_job().runner;
    runner.group = told("from-webhook", FactSource::Webhook);
    runner.name = told("from-token", FactSource::Token);
    runner.merge(crate::ci::Runner {
        group: told("from-api", FactSource::CiApi),
        name: told("api-name", FactSource::CiApi),
        ..Default::default()
    });
    assert_eq!(runner.group, told("from-api", FactSource::CiApi), "the CI's API beats a webhook");
    assert_eq!(runner.name, told("from-token", FactSource::Token), "a signed claim beats the CI's API");
}

const SINGLE_USE: &str = r#"
  - name: ephemeral
    single_use: true
    match: { runner_environment: self-hosted, runner_group: ephemeral }
  - name: hosted
    match: { runner_environment: github-hosted }"#;

#[test]
fn a_decision_says_when_it_needs_runner_facts_the_job_lacks() {
    let set = parse(&role_policy("[]", "[ { issuer: github, runner_group: release } ]", "[]"));
    let roles = ["r".to_owned()];
    assert!(set.wants_runner_facts(&github_job(), &roles), "runner_group is not in GitHub's token");
    let told_group = with(github_job(), |j| j.runner.group = told("release", FactSource::Webhook));
    assert!(!set.wants_runner_facts(&told_group, &roles), "already known");
    assert!(!set.wants_runner_facts(&github_job(), &["other".to_owned()]), "no requested role reads it");

    let plain = parse(&role_policy("[]", "[ { issuer: github, repository: octo-org/octo-repo } ]", "[]"));
    assert!(!plain.wants_runner_facts(&github_job(), &roles), "nothing reads a runner fact");

    let tiers = parse(&role_policy(SINGLE_USE, "[ { issuer: github, runner_tier: ephemeral } ]", "[]"));
    assert!(tiers.wants_runner_facts(&github_job(), &roles), "a tier match reads runner_group");

    const PLAIN_TIER: &str = "[ { name: grouped, match: { runner_group: release } } ]";
    let unread = parse(&role_policy(PLAIN_TIER, "[ { issuer: github, repository: octo-org/octo-repo } ]", "[]"));
    assert!(!unread.wants_runner_facts(&github_job(), &roles), "no requested role tests a tier, none is single-use");
    let read = parse(&role_policy(PLAIN_TIER, "[ { issuer: github, runner_tier: grouped } ]", "[]"));
    assert!(read.wants_runner_facts(&github_job(), &roles), "the requested role tests the tier");

    let environment = parse(&role_policy("[]", "[ { issuer: github, runner_environment: self-hosted } ]", "[]"));
    assert!(!environment.wants_runner_facts(&github_job(), &roles), "the token's claim tells it");
    assert!(environment.wants_runner_facts(&azure_like(None), &roles), "an Azure token does not");
    let told_environment = azure_like(told("self-hosted", FactSource::CiApi));
    assert!(!environment.wants_runner_facts(&told_environment, &roles), "already known");
}

#[test]
fn a_single_use_tier_is_told_apart() {
    let set = parse(&role_policy(SINGLE_USE, "[ { issuer: github, runner_tier: ephemeral } ]", "[]"));
    let ephemeral = with(github_job(), |j| {
        j.runner_environment = Some("self-hosted".into());
        j.runner.group = told("ephemeral", FactSource::CiApi);
    });
    let tier = set.tier(&ephemeral).expect("a tier");
    assert_eq!((tier.name, tier.single_use), ("ephemeral", true));
    let hosted = set.tier(&github_job()).expect("a tier");
    assert_eq!((hosted.name, hosted.single_use), ("hosted", false));
}

#[test]
fn runner_keys_per_ci() {
    let github = with(github_job(), |j| {
        j.runner.id = told("5", FactSource::CiApi);
        j.runner.name = told("release-runner-5", FactSource::CiApi);
    });
    assert_eq!(github.runner_key().as_deref(), Ok("5/release-runner-5"));
    assert_eq!(github_job().runner_key(), Err("runner_id"));
    let only_id = with(github_job(), |j| j.runner.id = told("5", FactSource::Webhook));
    assert_eq!(only_id.runner_key(), Err("runner_name"));
    // GitLab's runner id names a configuration many autoscaled hosts share: never a key.
    assert_eq!(gitlab_job().runner_key(), Err("runner_manager"));
    let managed = with(gitlab_job(), |j| j.runner.manager = told("s_7c3b2a1f9e04", FactSource::CiApi));
    assert_eq!(managed.runner_key().as_deref(), Ok("s_7c3b2a1f9e04"));
    let mut buildkite = Job::new("buildkite", "j", "acme-inc/app");
    buildkite.kind = Some(crate::ci::CiKind::Buildkite);
    buildkite.runner_key_by = crate::ci::RunnerKey::Id;
    assert_eq!(buildkite.runner_key(), Err("runner_id"));
    buildkite.runner.id = told("0184990a", FactSource::Token);
    assert_eq!(buildkite.runner_key().as_deref(), Ok("0184990a"));
}
