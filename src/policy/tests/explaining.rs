//! The full explanation `ci-creds policy explain` prints: every rule and condition, with the
//! job's value and what the rule accepts, agreeing with `decide`.

use super::{decide, github_job, parse, role_policy, with, with_claim};
use crate::ci::DangerousTrigger;
use crate::policy::{ConditionCheck, RoleExplanation, RuleExplanation};

fn check(field: &str, actual: Option<&str>, accepted: &[&str], holds: bool) -> ConditionCheck {
    ConditionCheck {
        field: field.to_owned(),
        actual: actual.map(str::to_owned),
        source: None,
        accepted: accepted.iter().map(|a| (*a).to_owned()).collect(),
        holds,
        unknown_because: None,
    }
}

#[test]
fn lists_every_condition_with_both_values() {
    let set = parse(&role_policy(
        "[ { name: hosted, match: { runner_environment: github-hosted } } ]",
        r#"[ { issuer: github, ref: [refs/heads/main, "glob:refs/tags/v*"], environment: staging, runner_tier: hosted } ]"#,
        r#"[ { claims: { actor: "dependabot[bot]" } } ]"#,
    ));
    let explanation = set.explain(&github_job(), "r");
    assert_eq!(
        explanation,
        RoleExplanation {
            role: "r".into(),
            defined: true,
            granted: false,
            allow: vec![RuleExplanation {
                matches: false,
                conditions: vec![
                    check("issuer", Some("github"), &["github"], true),
                    check("ref", Some("refs/heads/main"), &["refs/heads/main", "glob:refs/tags/v*"], true),
                    check("environment", Some("prod"), &["staging"], false),
                    check("runner_tier", Some("hosted"), &["hosted"], true),
                ],
                unnamed_trigger: None,
            }],
            deny: vec![RuleExplanation {
                matches: false,
                conditions: vec![check("claims.actor", Some("octocat"), &["dependabot[bot]"], false)],
                unnamed_trigger: None,
            }],
            bound_to: None,
        }
    );
}

#[test]
fn agrees_with_decide() {
    let set = parse(&role_policy(
        "[]",
        "[ { issuer: github, repository_id: \"74\" }, { issuer: github, event: pull_request_target } ]",
        r#"[ { claims: { actor: "dependabot[bot]" } } ]"#,
    ));
    let jobs = [
        ("granted", github_job()),
        ("denied by a deny rule", with_claim(github_job(), "actor", "dependabot[bot]")),
        ("no allow rule", with(github_job(), |j| j.repository_id = Some("75".into()))),
        (
            "dangerous trigger not named by the matching rule",
            with(github_job(), |j| {
                j.event = Some("workflow_run".into());
                j.dangerous_trigger = Some(DangerousTrigger::Event("workflow_run".into()));
            }),
        ),
    ];
    for (name, job) in jobs {
        let explanation = set.explain(&job, "r");
        assert_eq!(explanation.granted, decide(&set, &job, &["r"]).is_ok(), "case: {name}");
        assert_eq!(
            explanation.allow.iter().any(|r| r.matches) && !explanation.deny.iter().any(|r| r.matches),
            explanation.granted,
            "case: {name}"
        );
    }
}

#[test]
fn names_an_unnamed_dangerous_trigger() {
    let set = parse(&role_policy("[]", "[ { issuer: github, repository_id: \"74\" } ]", "[]"));
    let job = with(github_job(), |j| {
        j.event = Some("workflow_run".into());
        j.dangerous_trigger = Some(DangerousTrigger::Event("workflow_run".into()));
    });
    let rule = &set.explain(&job, "r").allow[0];
    assert!(!rule.matches);
    assert!(rule.conditions.iter().all(|c| c.holds));
    assert_eq!(
        rule.unnamed_trigger.as_deref(),
        Some("event: workflow_run is a dangerous trigger and the rule does not name it explicitly")
    );
}

#[test]
fn missing_claims_and_undefined_roles() {
    let set =
        parse(&role_policy("[]", "[ { issuer: github, claims: { groups: [admins] }, environment: prod } ]", "[]"));
    let job = with(github_job(), |j| {
        j.environment = None;
        j.claims.insert("groups".into(), serde_json::json!(["dev", "ops"]));
    });
    let rule = &set.explain(&job, "r").allow[0];
    assert_eq!(
        rule.conditions,
        [
            check("issuer", Some("github"), &["github"], true),
            check("claims.groups", Some(r#"["dev","ops"]"#), &["admins"], false),
            check("environment", None, &["prod"], false),
        ]
    );
    let ghost = set.explain(&job, "ghost");
    assert!(!ghost.defined && !ghost.granted && ghost.allow.is_empty());
}
