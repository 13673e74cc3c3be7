//! Every kind of item configured, every one working: exit 0, a line each, JSON of the same, and
//! no secret in either.

use reqwest::Method;
use serde_json::{Value, json};

use super::Setup;
use crate::support::bao::Bao;
use crate::support::ci_api::CiApi;
use crate::support::github_api::{APP_ID, GithubApi};
use crate::support::moto::{Moto, REGION};
use crate::support::start_issuer;

pub const POLICY: &str = r#"
roles:
  - name: read-config
    backend: vault
    max_ttl: 5m
    vault:
      policies: [read-config]
      secret_path: secret/data/config/app
    allow:
      - issuer: github
        repository_id: "74"
  - name: release-bot
    backend: github
    max_ttl: 30m
    github:
      owner: octo-org
      repositories: [app]
      permissions: { contents: read }
    allow:
      - issuer: github
        repository_id: "74"
"#;

pub const READ_CONFIG_HCL: &str = r#"path "secret/data/config/*" { capabilities = ["read"] }"#;

/// The token role job tokens are created against, as docs/vault.md has the operator make it.
pub const TOKEN_ROLE: &str = "ci-creds-job";

/// The broker's policy as the repository ships it, loaded as `ci-creds-broker`, and the token role.
pub async fn shipped_broker_policy(bao: &Bao) {
    bao.put_policy("ci-creds-broker", &crate::support::login_stack::shipped_policy()).await;
    let role = json!({ "orphan": true, "renewable": true, "allowed_policies": ["read-config"] });
    let (status, answer) = bao.root(Method::POST, &format!("auth/token/roles/{TOKEN_ROLE}"), Some(role)).await;
    assert!(status < 300, "token role: HTTP {status} {answer}");
}

/// A token of `policies` only (not Vault's default policy), renewable, for 30 days.
pub async fn broker_token(bao: &Bao, policies: &[&str]) -> String {
    let body = json!({ "policies": policies, "ttl": "720h", "no_default_policy": true });
    let (status, answer) = bao.root(Method::POST, "auth/token/create", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    answer["auth"]["client_token"].as_str().expect("a token").to_owned()
}

fn in_days(days: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc() + time::Duration::days(days)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_item_passes_against_the_real_components() {
    let (bao, moto) = tokio::join!(Bao::start(), Moto::start(&[]));
    bao.put_policy("read-config", READ_CONFIG_HCL).await;
    shipped_broker_policy(&bao).await;
    let vault_token = broker_token(&bao, &["ci-creds-broker"]).await;
    let (github, gitlab, buildkite) = (start_issuer().await, start_issuer().await, start_issuer().await);
    let (gitlab_api, buildkite_api, github_api) =
        (CiApi::gitlab().await, CiApi::buildkite().await, GithubApi::start().await);
    gitlab_api.set_token_expiry(&in_days(90).date().to_string());
    let pat = "github_pat_preflight0123456789";
    github_api.set_personal_token(
        pat,
        Some(format!(
            "{} UTC",
            // Half a day on, so that the seconds the run takes do not cross a day.
            (in_days(60) + time::Duration::hours(12))
                .format(&time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"))
                .unwrap()
        )),
    );
    let webhook_secret = "0123456789abcdef0123456789abcdef-github";

    let mut setup = Setup::new(POLICY).await;
    setup
        .issuer("github", "github", github.url())
        .issuer("gitlab", "gitlab", gitlab.url())
        .issuer("buildkite", "buildkite", buildkite.url())
        .section(&format!(
            "[vault]\naddress = \"{}\"\ntoken_env = \"PF_VAULT_TOKEN\"\ntoken_role = \"{TOKEN_ROLE}\"\ntimeout_seconds = 5",
            bao.address
        ))
        .section(&format!("[aws]\nregion = \"{REGION}\"\nendpoint_url = \"{}\"\ntimeout_seconds = 5", moto.url))
        .section(&format!(
            "[github]\napi_url = \"{}\"\napp_id = \"{APP_ID}\"\nprivate_key_env = \"PF_GITHUB_APP_KEY\"",
            github_api.url
        ))
        .section("[webhooks.github]\nissuer = \"github\"\nsecret_env = \"PF_GITHUB_WEBHOOK_SECRET\"")
        .section(&format!("[ci_api.github]\napi_url = \"{}\"\ntoken_env = \"PF_GITHUB_PAT\"", github_api.url))
        .section(&format!("[ci_api.gitlab]\napi_url = \"{}\"\ntoken_env = \"PF_GITLAB_TOKEN\"", gitlab_api.url))
        .section(&format!(
            "[ci_api.buildkite]\napi_url = \"{}\"\ntoken_env = \"PF_BUILDKITE_TOKEN\"",
            buildkite_api.url
        ))
        .env("PF_VAULT_TOKEN", &vault_token)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("PF_GITHUB_APP_KEY", &github_api.private_key_pem)
        .env("PF_GITHUB_WEBHOOK_SECRET", webhook_secret)
        .env("PF_GITHUB_PAT", pat)
        .env("PF_GITLAB_TOKEN", &gitlab_api.token)
        .env("PF_BUILDKITE_TOKEN", &buildkite_api.token);

    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 0, "stdout:\n{}\nstderr:\n{}", checked.stdout, checked.stderr);
    let items = [
        "policy",
        "store",
        "issuer github",
        "issuer gitlab",
        "issuer buildkite",
        "webhook github",
        "ci_api github",
        "ci_api gitlab",
        "ci_api buildkite",
        "vault",
        "vault capabilities",
        "vault role read-config",
        "aws",
        "github app",
        "github app on octo-org",
    ];
    for item in items {
        assert_eq!(checked.status(item), "ok", "{}", checked.stdout);
    }
    assert_eq!(checked.stdout.lines().count(), items.len(), "{}", checked.stdout);
    assert!(checked.line("issuer github").contains("1 key(s) (RS256)"), "{}", checked.stdout);
    assert!(checked.line("ci_api gitlab").contains("expires in 89 days"), "{}", checked.stdout);
    assert!(checked.line("ci_api github").contains("expires in 60 days"), "{}", checked.stdout);
    assert!(checked.line("vault role read-config").contains("can read secret/data/config/app"), "{}", checked.stdout);
    assert!(checked.line("aws").contains("arn:aws:"), "{}", checked.stdout);

    let json = setup.check(&["--json"]).await;
    assert_eq!(json.code, 0);
    let findings: Vec<Value> = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(findings.len(), items.len());
    for finding in &findings {
        let keys: Vec<&str> = finding.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["detail", "fix", "item", "status"], "{finding}");
        assert_eq!((finding["status"].as_str(), finding["fix"].is_null()), (Some("ok"), true), "{finding}");
    }
    assert_eq!(findings[0]["item"], "policy");
    assert_eq!(findings[1]["item"], "store");

    for secret in [vault_token.as_str(), pat, webhook_secret, &gitlab_api.token, &buildkite_api.token] {
        for output in [&checked.stdout, &checked.stderr, &json.stdout, &json.stderr] {
            assert!(!output.contains(secret), "a secret is printed:\n{output}");
        }
    }
}
