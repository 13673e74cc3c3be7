//! AWS roles: what the `aws:` section holds once loaded, and each way it can be wrong.

use crate::policy::{PolicyFile, PolicySet};

/// A policy file `p.yaml` whose one role `r` has `role`'s lines and an allow rule.
pub(super) fn load(role: &str) -> Result<PolicySet, String> {
    let body: String = role.lines().map(|l| format!("    {l}\n")).collect();
    let text = format!("roles:\n  - name: r\n{body}    allow: [ {{ issuer: github, repository_id: \"74\" }} ]\n");
    PolicySet::parse(&[PolicyFile { path: "p.yaml", text: &text }]).map_err(|e| e.to_string())
}

#[test]
fn loads_the_scope_with_the_session_policy_as_compact_json() {
    let set = load(
        "backend: aws\nmax_ttl: 1h\naws:\n  role_arn: arn:aws:iam::123456789012:role/ci/deploy\n  session_policy: { Version: \"2012-10-17\", Statement: [] }\n  session_tags: { team: web }\n",
    )
    .unwrap();
    let scope = set.role("r").and_then(|r| r.aws.clone()).expect("an aws scope");
    assert_eq!(scope.role_arn, "arn:aws:iam::123456789012:role/ci/deploy");
    assert_eq!(scope.session_policy.as_deref(), Some(r#"{"Statement":[],"Version":"2012-10-17"}"#));
    assert_eq!(scope.session_tags.get("team").map(String::as_str), Some("web"));
}

#[test]
fn refuses_what_sts_would_refuse_at_every_mint() {
    let arn = "arn:aws:iam::123456789012:role/deploy";
    for (case, role, expected) in [
        ("no aws section", "backend: aws\nmax_ttl: 1h\n".to_owned(), "no `aws:` section"),
        (
            "vault section",
            format!("backend: aws\nmax_ttl: 1h\nvault: {{ policies: [p] }}\naws: {{ role_arn: {arn} }}\n"),
            "another backend",
        ),
        ("short ttl", format!("backend: aws\nmax_ttl: 5m\naws: {{ role_arn: {arn} }}\n"), "between 15m and 12h"),
        ("long ttl", format!("backend: aws\nmax_ttl: 13h\naws: {{ role_arn: {arn} }}\n"), "between 15m and 12h"),
        (
            "user arn",
            "backend: aws\nmax_ttl: 1h\naws: { role_arn: \"arn:aws:iam::123456789012:user/x\" }\n".to_owned(),
            "not an IAM role ARN",
        ),
        (
            "short account",
            "backend: aws\nmax_ttl: 1h\naws: { role_arn: \"arn:aws:iam::1234:role/x\" }\n".to_owned(),
            "not an IAM role ARN",
        ),
        (
            "reserved tag",
            format!("backend: aws\nmax_ttl: 1h\naws: {{ role_arn: {arn}, session_tags: {{ CI_job_id: x }} }}\n"),
            "reserved",
        ),
        (
            "bad tag value",
            format!("backend: aws\nmax_ttl: 1h\naws: {{ role_arn: {arn}, session_tags: {{ team: \"a#b\" }} }}\n"),
            "the value",
        ),
        (
            "policy not a mapping",
            format!("backend: aws\nmax_ttl: 1h\naws: {{ role_arn: {arn}, session_policy: allow-all }}\n"),
            "policy document mapping",
        ),
        (
            "unknown key",
            format!("backend: aws\nmax_ttl: 1h\naws: {{ role_arn: {arn}, external_id: x }}\n"),
            "unknown field `external_id`",
        ),
    ] {
        let error = load(&role).err().unwrap_or_else(|| panic!("{case}: loaded"));
        assert!(error.contains("p.yaml:") && error.contains(expected), "{case}: {error}");
    }
}
