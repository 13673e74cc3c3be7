//! A policy set shaped like a real fleet's, for the decision bench: 200 roles over 40
//! repositories, each role with four allow rules and one deny rule (1,000 rules), written the way
//! operators write them: exact values, lists, anchored globs, numeric repository pins, refs,
//! events, environments and runner tiers.

pub const REPOSITORIES: usize = 40;
pub const ALLOW_RULES_PER_ROLE: usize = 4;
pub const DENY_RULES_PER_ROLE: usize = 1;

/// Owners and their numeric ids; `octo-org` (65) is the fixture token's.
const OWNERS: [(&str, &str); 6] = [
    ("platform", "1201"),
    ("payments", "1202"),
    ("octo-org", "65"),
    ("ml-research", "1204"),
    ("mobile", "1205"),
    ("infra", "1206"),
];
/// The fixture token's repository (`repository_id` 74) sits at this index, mid-file, so the
/// lookup favours nothing.
const TOKEN_REPOSITORY_INDEX: usize = 17;

/// The roles the bench's token asks for; both are granted to the fixture's job (a
/// `workflow_dispatch` on `main`, environment `prod`, a GitHub-hosted runner), each by its role's
/// third allow rule, so failing rules and the deny rule are evaluated too.
pub fn requested_roles() -> Vec<String> {
    vec!["octo-org.octo-repo.deploy-prod".to_owned(), "octo-org.octo-repo.read-config".to_owned()]
}

/// First match wins; the fixture's job only matches the last tier, so every tier is tried.
const RUNNER_TIERS: &str = r#"runner_tiers:
  - name: gpu
    match: { runner_environment: self-hosted, owner: [ml-research] }
  - name: release
    match:
      runner_environment: self-hosted
      job_workflow_ref: "glob:*/release-workflows/.github/workflows/*.yml@refs/heads/main"
  - name: hosted
    match: { runner_environment: [github-hosted, gitlab-hosted, buildkite-hosted] }
roles:
"#;

/// One template per kind of role every repository has. `{pin}` names the repository by name and
/// numeric id; `{role}`, `{repo}`, `{id}`, `{owner}` and `{owner_id}` are filled per repository.
const ROLE_TEMPLATES: [&str; 5] = [
    r#"  - name: {role}
    backend: vault
    max_ttl: 15m
    vault: { policies: [{role}] }
    allow:
      - { {pin}, ref: "glob:refs/tags/v*", event: push, environment: prod, runner_tier: hosted }
      - { {pin}, ref: refs/heads/release, event: [push, workflow_dispatch], environment: [prod, prod-eu] }
      - { {pin}, ref: refs/heads/main, event: [push, workflow_dispatch], environment: prod, runner_tier: hosted }
      - { issuer: github, owner_id: "{owner_id}", job_workflow_ref: "glob:{owner}/deploy/.github/workflows/*.yml@refs/heads/main" }
    deny:
      - { claims: { actor: ["dependabot[bot]", "renovate[bot]"] } }
"#,
    r#"  - name: {role}
    backend: vault
    max_ttl: 30m
    vault: { policies: [{role}], secret_path: database/creds/staging }
    allow:
      - { {pin}, ref: "glob:refs/heads/*", event: [push, workflow_dispatch], environment: staging }
      - { {pin}, ref: "glob:refs/tags/v*-rc*", event: push, environment: staging }
      - { {pin}, ref_type: branch, event: merge_group, environment: [staging, qa] }
      - { issuer: github, owner_id: "{owner_id}", environment: staging, runner_tier: [hosted, release] }
    deny:
      - { ref: "glob:refs/heads/dependabot/**" }
"#,
    r#"  - name: {role}
    backend: vault
    max_ttl: 1h
    vault: { policies: [{role}, shared-read] }
    allow:
      - { {pin}, ref: "glob:refs/heads/feature/*", event: pull_request }
      - { {pin}, ref_type: tag, event: [push, release] }
      - { {pin}, ref: "glob:refs/heads/*", runner_tier: [hosted, release] }
      - { issuer: github, owner: {owner}, workflow_ref: "glob:{repo}/.github/workflows/*.yml@refs/heads/main" }
    deny:
      - { event: [pull_request_target, issue_comment] }
"#,
    r#"  - name: {role}
    backend: aws
    max_ttl: 1h
    aws: { role_arn: "arn:aws:iam::123456789012:role/ci/{owner}-{id}-cache", session_tags: { team: {owner} } }
    allow:
      - { {pin}, event: [push, pull_request, merge_group], runner_tier: hosted }
      - { {pin}, event: schedule, ref: refs/heads/main }
      - { issuer: github, owner_id: "{owner_id}", runner_tier: [gpu, release] }
      - { issuer: github, repository_id: "{id}", claims: { repository_visibility: [private, internal] } }
    deny:
      - { claims: { repository_visibility: public } }
"#,
    r#"  - name: {role}
    backend: aws
    max_ttl: 30m
    aws: { role_arn: "arn:aws:iam::123456789012:role/ci/{owner}-{id}-publish" }
    allow:
      - { {pin}, ref: "glob:refs/tags/v[0-9]*", event: push, runner_tier: release }
      - { {pin}, ref: refs/heads/main, event: release, environment: publish }
      - { issuer: github, repository_id: "{id}", job_workflow_ref: "glob:{owner}/release-workflows/.github/workflows/*@refs/tags/v*" }
      - { {pin}, ref: "glob:refs/heads/release/**", event: workflow_dispatch, environment: publish }
    deny:
      - { claims: { actor: "github-actions[bot]" } }
"#,
];
/// The role names' suffixes, in `ROLE_TEMPLATES` order.
pub const ROLE_KINDS: [&str; 5] = ["deploy-prod", "deploy-staging", "read-config", "ci-cache", "publish"];

pub fn yaml() -> String {
    let mut yaml = String::from(RUNNER_TIERS);
    for index in 0..REPOSITORIES {
        let (owner, owner_id) = OWNERS[index % OWNERS.len()];
        let (repo, id) = if index == TOKEN_REPOSITORY_INDEX {
            ("octo-org/octo-repo".to_owned(), "74".to_owned())
        } else {
            (format!("{owner}/service-{index:02}"), (100_000 + index * 37).to_string())
        };
        for (template, kind) in ROLE_TEMPLATES.iter().zip(ROLE_KINDS) {
            let role = format!("{}.{kind}", repo.replace('/', "."));
            // `{pin}` first: it expands to the other placeholders.
            let filled = template
                .replace("{pin}", r#"issuer: github, repository: {repo}, repository_id: "{id}""#)
                .replace("{role}", &role)
                .replace("{repo}", &repo)
                .replace("{id}", &id)
                .replace("{owner_id}", owner_id)
                .replace("{owner}", owner);
            yaml.push_str(&filled);
        }
    }
    yaml
}
