//! GitHub roles: what the `github:` section holds once loaded, and each way it can be wrong,
//! refused at load with the file and line rather than by GitHub at the first mint.

use super::aws_roles::load;
use crate::policy::Repositories;

#[test]
fn loads_the_owner_repositories_and_permissions_as_written() {
    let set = load(
        "backend: github\nmax_ttl: 30m\ngithub:\n  owner: octo-org\n  repositories: [app, infra]\n  permissions: { contents: write, pull_requests: write, repository_projects: admin }\n",
    )
    .unwrap();
    let scope = set.role("r").and_then(|r| r.github_app.clone()).expect("a github scope");
    assert_eq!(scope.owner, "octo-org");
    assert_eq!(scope.repositories, Repositories::Names(vec!["app".into(), "infra".into()]));
    assert_eq!(scope.permissions.get("repository_projects").map(String::as_str), Some("admin"));
    let by_id = load("backend: github\nmax_ttl: 1h\ngithub: { owner: octo-org, repository_ids: [123, 456], permissions: { issues: read } }\n")
        .unwrap();
    assert_eq!(
        by_id.role("r").and_then(|r| r.github_app.clone()).unwrap().repositories,
        Repositories::Ids(vec![123, 456])
    );
}

#[test]
fn refuses_each_kind_of_bad_input_with_file_and_line() {
    let scope = |github: &str| format!("backend: github\nmax_ttl: 30m\ngithub: {github}\n");
    for (case, role, expected) in [
        ("no github section", "backend: github\nmax_ttl: 30m\n".to_owned(), "no `github:` section"),
        ("missing owner", scope("{ repositories: [app], permissions: { contents: read } }"), "`github.owner` is missing"),
        ("no repositories", scope("{ owner: o, permissions: { contents: read } }"), "names no repositories"),
        ("empty repositories", scope("{ owner: o, repositories: [], permissions: { contents: read } }"), "is empty"),
        ("empty ids", scope("{ owner: o, repository_ids: [], permissions: { contents: read } }"), "is empty"),
        (
            "names and ids",
            scope("{ owner: o, repositories: [a], repository_ids: [1], permissions: { contents: read } }"),
            "both",
        ),
        ("owner in a name", scope("{ owner: o, repositories: [o/a], permissions: { contents: read } }"), "not a repository name"),
        ("unknown permission", scope("{ owner: o, repositories: [a], permissions: { content: read } }"), "`content` is not a permission"),
        ("unknown level", scope("{ owner: o, repositories: [a], permissions: { contents: admin } }"), "`admin` is not one of read, write"),
        ("write-only permission read", scope("{ owner: o, repositories: [a], permissions: { workflows: read } }"), "not one of write"),
        ("no permissions", scope("{ owner: o, repositories: [a] }"), "`github.permissions` is missing or empty"),
        ("unknown key", scope("{ owner: o, repositories: [a], permissions: { contents: read }, all: true }"), "unknown field `all`"),
        (
            "ttl over an hour",
            "backend: github\nmax_ttl: 2h\ngithub: { owner: o, repositories: [a], permissions: { contents: read } }\n".to_owned(),
            "at most 1h",
        ),
        (
            "vault section",
            "backend: github\nmax_ttl: 30m\nvault: { policies: [p] }\ngithub: { owner: o, repositories: [a], permissions: { contents: read } }\n".to_owned(),
            "another backend",
        ),
    ] {
        let error = load(&role).expect_err(case);
        assert!(error.contains(expected), "{case}: {error}");
        let line = error.strip_prefix("p.yaml:").and_then(|rest| rest.split(':').next()).and_then(|n| n.parse::<u32>().ok());
        assert!(line.is_some(), "{case}: names file and line: {error}");
    }
}
