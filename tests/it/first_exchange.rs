//! docs/first-exchange.md's path for each CI: the config and policy it shows are the files under
//! deploy/first-exchange/, word for word; each config loads and its policy checks; and the job the
//! path describes (the CI's documented token, made the job the path is about) is granted the role.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::policy_cli::{arg, ci_creds, stdout};

/// Each CI's folder, its token fixture, and what makes the fixture's job the one the path's
/// policy allows (a claim set to `null` is removed).
fn paths() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("github", "github-token-claims.json", json!({ "event_name": "push" })),
        (
            "gitlab",
            "gitlab-token-claims.json",
            json!({ "iss": "https://gitlab.com", "ref": "main", "ref_path": "refs/heads/main", "ref_protected": "true" }),
        ),
        ("buildkite", "buildkite-token-claims.json", json!({ "build_tag": null })),
        (
            "circleci",
            "circleci-token-claims.json",
            json!({ "oidc.circleci.com/vcs-origin": "github.com/octo-org/octo-repo" }),
        ),
        ("jenkins", "jenkins-token-claims.json", json!({})),
        ("azure_pipelines", "azure-pipelines-token-claims.json", json!({})),
    ]
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_page_shows_each_file_as_it_is() {
    let page = read(&root().join("docs/first-exchange.md"));
    for (ci, _, _) in paths() {
        for (file, lang) in [("config.toml", "toml"), ("policy/deploy.yaml", "yaml")] {
            let text = read(&root().join("deploy/first-exchange").join(ci).join(file));
            let shown = format!("```{lang}\n{text}```\n");
            assert!(page.contains(&shown), "docs/first-exchange.md does not show {ci}/{file} as it is");
        }
    }
}

#[test]
fn each_path_s_policy_checks_and_grants_the_job_it_describes() {
    let tmp = tempfile::tempdir().unwrap();
    for (ci, fixture, changes) in paths() {
        let config = root().join("deploy/first-exchange").join(ci).join("config.toml");
        let check = ci_creds(&["policy", "check", "--config", arg(&config)]);
        assert_eq!(check.status.code(), Some(0), "{ci}: {}{}", stdout(&check), String::from_utf8_lossy(&check.stderr));

        let mut claims = crate::support::fixture(fixture);
        for (name, value) in changes.as_object().unwrap() {
            match value {
                Value::Null => claims.as_object_mut().unwrap().remove(name),
                value => claims.as_object_mut().unwrap().insert(name.clone(), value.clone()),
            };
        }
        let claims_file = tmp.path().join(format!("{ci}.json"));
        std::fs::write(&claims_file, serde_json::to_vec(&claims).unwrap()).unwrap();
        let explain = ci_creds(&[
            "policy",
            "explain",
            "--claims",
            arg(&claims_file),
            "--role",
            "deploy-prod",
            "--config",
            arg(&config),
        ]);
        let shown = stdout(&explain);
        assert!(
            shown.contains("role deploy-prod: granted"),
            "{ci}: {shown}{}",
            String::from_utf8_lossy(&explain.stderr)
        );
    }
}
