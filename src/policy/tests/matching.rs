//! One allow rule against one job: which conditions hold, and what the refusal says.

use serde_json::json;

use super::{github_job, gitlab_job, parse, reasons_for_r, role_policy, token_fact, with};
use crate::ci::Job;

struct Case {
    name: &'static str,
    rule: &'static str,
    job: Job,
    /// Empty when the role must be granted.
    reasons: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "every documented field matches exactly",
            rule: r#"{ issuer: github, repository: octo-org/octo-repo, repository_id: "74", owner: octo-org, owner_id: "65",
                       ref: refs/heads/main, ref_type: branch, environment: prod, event: [push, workflow_dispatch],
                       workflow_ref: "octo-org/octo-repo/.github/workflows/deploy.yml@refs/heads/main",
                       job_workflow_ref: "octo-org/octo-automation/.github/workflows/oidc.yml@refs/heads/main",
                       runner_environment: github-hosted }"#,
            job: github_job(),
            reasons: &[],
        },
        Case {
            name: "exact comparison is case-sensitive",
            rule: "{ issuer: github, repository: Octo-Org/octo-repo }",
            job: github_job(),
            reasons: &["repository: octo-org/octo-repo is not one of the allowed values"],
        },
        Case {
            name: "exact comparison does not match a prefix",
            rule: "{ issuer: github, ref: refs/heads/main }",
            job: with(github_job(), |j| j.git_ref = Some("refs/heads/main-2".into())),
            reasons: &["ref: refs/heads/main-2 is not one of the allowed values"],
        },
        Case {
            name: "a list is any of",
            rule: "{ issuer: github, event: [push, workflow_dispatch] }",
            job: github_job(),
            reasons: &[],
        },
        Case {
            name: "a list none of whose values match",
            rule: "{ issuer: github, event: [push, schedule] }",
            job: github_job(),
            reasons: &["event: workflow_dispatch is not one of the allowed values"],
        },
        Case {
            name: "glob matches one segment",
            rule: r#"{ issuer: github, ref: "glob:refs/heads/release/*" }"#,
            job: with(github_job(), |j| j.git_ref = Some("refs/heads/release/1".into())),
            reasons: &[],
        },
        Case {
            name: "glob star never crosses a slash",
            rule: r#"{ issuer: github, ref: "glob:refs/heads/release/*" }"#,
            job: with(github_job(), |j| j.git_ref = Some("refs/heads/release/1/x".into())),
            reasons: &["ref: refs/heads/release/1/x is not one of the allowed values"],
        },
        Case {
            name: "glob is anchored at the start",
            rule: r#"{ issuer: github, ref: "glob:refs/heads/release/*" }"#,
            job: with(github_job(), |j| j.git_ref = Some("xrefs/heads/release/1".into())),
            reasons: &["ref: xrefs/heads/release/1 is not one of the allowed values"],
        },
        Case {
            name: "exact and glob values mix in one list",
            rule: r#"{ issuer: github, ref: [refs/heads/main, "glob:refs/tags/v*"] }"#,
            job: with(github_job(), |j| j.git_ref = Some("refs/tags/v1.2".into())),
            reasons: &[],
        },
        Case {
            name: "an integer compares by its text",
            rule: "{ issuer: gitlab, runner_id: [12] }",
            job: with(gitlab_job(), |j| j.runner.id = token_fact("12")),
            reasons: &[],
        },
        Case {
            name: "a quoted integer compares the same",
            rule: r#"{ issuer: gitlab, runner_id: ["12"] }"#,
            job: with(gitlab_job(), |j| j.runner.id = token_fact("12")),
            reasons: &[],
        },
        Case {
            name: "an integer that differs",
            rule: "{ issuer: gitlab, runner_id: 12 }",
            job: gitlab_job(),
            reasons: &["runner_id: 1 is not one of the allowed values"],
        },
        Case {
            name: "a boolean matches Some(true)",
            rule: "{ issuer: gitlab, ref_protected: true }",
            job: with(gitlab_job(), |j| j.ref_protected = Some(true)),
            reasons: &[],
        },
        Case {
            name: "a boolean does not match Some(false)",
            rule: "{ issuer: gitlab, ref_protected: true }",
            job: gitlab_job(),
            reasons: &["ref_protected: false is not one of the allowed values"],
        },
        Case {
            name: "a boolean does not match a missing flag",
            rule: "{ issuer: gitlab, environment_protected: true }",
            job: with(gitlab_job(), |j| j.environment_protected = None),
            reasons: &["environment_protected: the token has no such claim"],
        },
        Case {
            name: "a condition on a missing field is false",
            rule: "{ issuer: github, environment: prod }",
            job: with(github_job(), |j| j.environment = None),
            reasons: &["environment: the token has no such claim"],
        },
        Case {
            name: "every failing condition is reported, in rule order",
            rule: "{ issuer: github, repository: octo-org/other, ref: refs/heads/prod, environment: prod, runner_id: 5 }",
            job: github_job(),
            reasons: &[
                "repository: octo-org/octo-repo is not one of the allowed values",
                "ref: refs/heads/main is not one of the allowed values",
                "runner_id unknown: neither the token, the CI's API nor a webhook told it",
            ],
        },
        Case {
            name: "a string claim",
            rule: "{ issuer: github, claims: { actor: octocat } }",
            job: github_job(),
            reasons: &[],
        },
        Case {
            name: "a string claim that differs",
            rule: r#"{ issuer: github, claims: { actor: "dependabot[bot]" } }"#,
            job: github_job(),
            reasons: &["claims.actor: octocat is not one of the allowed values"],
        },
        Case {
            name: "a numeric claim compares by its decimal text",
            rule: r#"{ issuer: gitlab, claims: { runner_id: "1" } }"#,
            job: gitlab_job(),
            reasons: &[],
        },
        Case {
            name: "a boolean claim",
            rule: "{ issuer: gitlab, claims: { ci_flag: true } }",
            job: with(gitlab_job(), |j| {
                j.claims.insert("ci_flag".into(), json!(true));
            }),
            reasons: &[],
        },
        Case {
            name: "a claim array matches on any element",
            rule: "{ issuer: gitlab, claims: { groups_direct: myothergroup/myothersubgroup } }",
            job: gitlab_job(),
            reasons: &[],
        },
        Case {
            name: "a claim array matches a glob on any element",
            rule: r#"{ issuer: gitlab, claims: { groups_direct: "glob:mygroup/*" } }"#,
            job: gitlab_job(),
            reasons: &[],
        },
        Case {
            name: "a claim array with no allowed element",
            rule: "{ issuer: gitlab, claims: { groups_direct: [othergroup] } }",
            job: gitlab_job(),
            reasons: &[
                "claims.groups_direct: none of [mygroup/mysubgroup, myothergroup/myothersubgroup] is one of the allowed values",
            ],
        },
        Case {
            name: "a missing claim",
            rule: "{ issuer: gitlab, claims: { actor: octocat } }",
            job: gitlab_job(),
            reasons: &["claims.actor: the token has no such claim"],
        },
        Case {
            name: "an object claim never matches",
            rule: r#"{ issuer: github, claims: { extra: "{}" } }"#,
            job: with(github_job(), |j| {
                j.claims.insert("extra".into(), json!({}));
            }),
            reasons: &["claims.extra: the token's value is not a string, number, boolean or list of them"],
        },
        Case {
            name: "a null claim never matches, not even the text null",
            rule: "{ issuer: github, claims: { extra: [\"null\", \"\"] } }",
            job: with(github_job(), |j| {
                j.claims.insert("extra".into(), json!(null));
            }),
            reasons: &["claims.extra: the token's value is not a string, number, boolean or list of them"],
        },
    ]
}

#[test]
fn conditions() {
    for case in cases() {
        let set = parse(&role_policy("[]", &format!("[ {} ]", case.rule), "[]"));
        assert_eq!(reasons_for_r(&set, &case.job), case.reasons, "case: {}", case.name);
    }
}

const TIERS: &str = r#"
  - name: hosted
    match: { runner_environment: [github-hosted, gitlab-hosted, buildkite-hosted] }
  - name: release
    match: { issuer: gitlab, runner_id: ["12", "13"] }"#;

#[test]
fn runner_tiers_first_match_wins() {
    let set = parse(&role_policy(TIERS, "[ { issuer: [github, gitlab], runner_tier: release } ]", "[]"));
    let cases: Vec<(&str, Job, Option<&str>)> = vec![
        ("github-hosted runner", github_job(), Some("hosted")),
        ("gitlab release runner", with(gitlab_job(), |j| j.runner.id = token_fact("13")), Some("release")),
        (
            "matches both tiers: the first listed wins",
            with(gitlab_job(), |j| {
                j.runner.id = token_fact("12");
                j.runner_environment = Some("gitlab-hosted".into());
            }),
            Some("hosted"),
        ),
        ("self-hosted runner of no tier", gitlab_job(), None),
        ("no runner claims at all", Job::new("github", "1", "octo-org/octo-repo"), None),
    ];
    for (name, job, tier) in cases {
        assert_eq!(set.runner_tier(&job), tier, "case: {name}");
    }
}

#[test]
fn runner_tier_condition() {
    let set = parse(&role_policy(TIERS, "[ { issuer: [github, gitlab], runner_tier: release } ]", "[]"));
    let cases: Vec<(&str, Job, &[&str])> = vec![
        ("in the tier", with(gitlab_job(), |j| j.runner.id = token_fact("12")), &[]),
        ("in another tier", github_job(), &["runner_tier: hosted is not one of the allowed values"]),
        ("in no tier", gitlab_job(), &["runner_tier: the job's runner is in no runner tier"]),
        (
            "in no tier, its facts not had",
            with(gitlab_job(), |j| j.runner.unavailable = Some("the CI's API did not answer: HTTP 503".into())),
            &[
                "runner_tier: the job's runner is in no runner tier, its facts unknown: the CI's API did not answer: HTTP 503",
            ],
        ),
    ];
    for (name, job, reasons) in cases {
        assert_eq!(reasons_for_r(&set, &job), reasons, "case: {name}");
    }
}
