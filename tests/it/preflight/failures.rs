//! One broken item per test, on the smallest config that has it: its line says `failed` (or
//! `warn`) with the fix, the other items still run, and the exit code follows.

use super::Setup;
use super::all_ok::{POLICY, READ_CONFIG_HCL, TOKEN_ROLE, broker_token, shipped_broker_policy};
use crate::support::bao::Bao;
use crate::support::ci_api::CiApi;
use crate::support::github_api::GithubApi;
use crate::support::{free_port, start_issuer};

/// No roles: only the items of the config are tried.
const NO_ROLES: &str = "roles: []\n";

async fn with_issuer(policy: &str) -> (Setup, std::sync::Arc<ci_creds::dev::DevIssuer>) {
    let issuer = start_issuer().await;
    let mut setup = Setup::new(policy).await;
    setup.issuer("github", "github", issuer.url());
    (setup, issuer)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_issuer_fails_and_the_store_is_still_checked() {
    let mut setup = Setup::new(NO_ROLES).await;
    setup.issuer("github", "github", &format!("http://127.0.0.1:{}", free_port()));
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("issuer github"), "failed");
    assert!(checked.line("issuer github").contains("cannot read its keys"), "{}", checked.stdout);
    assert!(checked.line("issuer github").contains(" — check `issuer` and `jwks_url`"), "{}", checked.stdout);
    assert_eq!(checked.status("store"), "ok", "{}", checked.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_jwks_that_does_not_parse_fails() {
    let issuer = start_issuer().await;
    let mut setup = Setup::new(NO_ROLES).await;
    // The discovery document is JSON, but no key set.
    let not_a_jwks = format!("{}/.well-known/openid-configuration", issuer.url());
    setup.issuer_with_jwks_url("github", "github", issuer.url(), &not_a_jwks);
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("issuer github"), "failed");
    assert!(checked.line("issuer github").contains("does not parse"), "{}", checked.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn ci_api_credentials_refused_fail_for_gitlab_and_buildkite() {
    let (gitlab_api, buildkite_api) = (CiApi::gitlab().await, CiApi::buildkite().await);
    let (mut setup, _github) = with_issuer(NO_ROLES).await;
    let (gitlab, buildkite) = (start_issuer().await, start_issuer().await);
    setup
        .issuer("gitlab", "gitlab", gitlab.url())
        .issuer("buildkite", "buildkite", buildkite.url())
        .section(&format!("[ci_api.gitlab]\napi_url = \"{}\"\ntoken_env = \"PF_GITLAB_TOKEN\"", gitlab_api.url))
        .section(&format!(
            "[ci_api.buildkite]\napi_url = \"{}\"\ntoken_env = \"PF_BUILDKITE_TOKEN\"",
            buildkite_api.url
        ))
        .env("PF_GITLAB_TOKEN", "glpat-revoked-long-ago")
        .env("PF_BUILDKITE_TOKEN", "bkua_revoked_long_ago");
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    for (item, env) in [("ci_api gitlab", "PF_GITLAB_TOKEN"), ("ci_api buildkite", "PF_BUILDKITE_TOKEN")] {
        assert_eq!(checked.status(item), "failed", "{}", checked.stdout);
        assert!(checked.line(item).contains("HTTP 401"), "{}", checked.stdout);
        assert!(checked.line(item).contains(&format!("put valid read credentials in {env}")), "{}", checked.stdout);
    }
    assert!(gitlab_api.requests().iter().any(|path| path == "/api/v4/personal_access_tokens/self"));
    assert!(buildkite_api.requests().iter().any(|path| path == "/v2/access-token"));
}

#[tokio::test(flavor = "multi_thread")]
async fn ci_api_credentials_expiring_in_five_days_warn_for_gitlab_and_github() {
    let (gitlab_api, github_api) = (CiApi::gitlab().await, GithubApi::start().await);
    // Five days and a half from now; GitLab's token expires at the start of the day after.
    let soon = time::OffsetDateTime::now_utc() + time::Duration::days(5) + time::Duration::hours(12);
    gitlab_api.set_token_expiry(&(time::OffsetDateTime::now_utc() + time::Duration::days(6)).date().to_string());
    let header = soon.format(&time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC"));
    github_api.set_personal_token("github_pat_soon", Some(header.unwrap()));
    let (mut setup, _github) = with_issuer(NO_ROLES).await;
    let gitlab = start_issuer().await;
    setup
        .issuer("gitlab", "gitlab", gitlab.url())
        .section(&format!("[ci_api.github]\napi_url = \"{}\"\ntoken_env = \"PF_GITHUB_PAT\"", github_api.url))
        .section(&format!("[ci_api.gitlab]\napi_url = \"{}\"\ntoken_env = \"PF_GITLAB_TOKEN\"", gitlab_api.url))
        .env("PF_GITHUB_PAT", "github_pat_soon")
        .env("PF_GITLAB_TOKEN", &gitlab_api.token);
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 0, "warnings alone pass: {}", checked.stdout);
    for item in ["ci_api gitlab", "ci_api github"] {
        assert_eq!(checked.status(item), "warn", "{}", checked.stdout);
        assert!(checked.line(item).contains("expires in 5 days"), "{}", checked.stdout);
        assert!(checked.line(item).contains("before they expire"), "{}", checked.stdout);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_whose_secret_env_is_unset_fails() {
    let (mut setup, _github) = with_issuer(NO_ROLES).await;
    setup.section("[webhooks.github]\nissuer = \"github\"\nsecret_env = \"PF_UNSET_WEBHOOK_SECRET\"");
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("webhook github"), "failed");
    assert!(checked.line("webhook github").contains("PF_UNSET_WEBHOOK_SECRET is not set"), "{}", checked.stdout);
    assert_eq!(checked.status("issuer github"), "ok", "{}", checked.stdout);
}

async fn with_vault(bao: &Bao, token: &str) -> Setup {
    with_vault_and_policy(bao, token, POLICY).await
}

async fn with_vault_and_policy(bao: &Bao, token: &str, policy: &str) -> Setup {
    bao.put_policy("read-config", READ_CONFIG_HCL).await;
    let (mut setup, github) = with_issuer(policy).await;
    std::mem::forget(github);
    setup
        .section(&format!(
            "[vault]\naddress = \"{}\"\ntoken_env = \"PF_VAULT_TOKEN\"\ntoken_role = \"{TOKEN_ROLE}\"\ntimeout_seconds = 5",
            bao.address
        ))
        .env("PF_VAULT_TOKEN", token);
    setup
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_vault_token_fails() {
    let bao = Bao::start().await;
    let checked = with_vault(&bao, "s.not-a-token-vault-knows").await.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("vault"), "failed");
    assert!(checked.line("vault").contains("the broker's token is refused (HTTP 403"), "{}", checked.stdout);
    assert!(checked.line("vault").contains("give the broker a valid token in PF_VAULT_TOKEN"), "{}", checked.stdout);
    assert!(!checked.stdout.contains("s.not-a-token-vault-knows"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vault_token_lacking_revoke_accessor_fails_with_the_capability_to_grant() {
    let bao = Bao::start().await;
    shipped_broker_policy(&bao).await;
    let shipped = crate::support::login_stack::shipped_policy();
    let without_revoke = shipped.replace("path \"auth/token/revoke-accessor\"", "path \"auth/token/revoke-orphan\"");
    assert_ne!(without_revoke, shipped);
    bao.put_policy("broker-without-revoke", &without_revoke).await;
    let token = broker_token(&bao, &["broker-without-revoke"]).await;
    let checked = with_vault(&bao, &token).await.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("vault"), "ok", "the token itself is valid: {}", checked.stdout);
    assert_eq!(checked.status("vault capabilities"), "failed");
    assert!(
        checked.line("vault capabilities").contains("token lacks update on auth/token/revoke-accessor — grant it"),
        "{}",
        checked.stdout
    );
    assert_eq!(checked.status("vault role read-config"), "failed", "{}", checked.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_sts_fails() {
    let (mut setup, _github) = with_issuer(NO_ROLES).await;
    setup
        .section(&format!(
            "[aws]\nregion = \"us-east-1\"\nendpoint_url = \"http://127.0.0.1:{}\"\ntimeout_seconds = 2",
            free_port()
        ))
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true");
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("aws"), "failed");
    assert!(checked.line("aws").contains("sts:GetCallerIdentity failed"), "{}", checked.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_store_fails() {
    let (mut setup, _github) = with_issuer(NO_ROLES).await;
    setup.store(&format!(
        "url = \"postgres://postgres@127.0.0.1:{}/ci_creds\"\nacquire_timeout_seconds = 2",
        free_port()
    ));
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 1, "{}", checked.stdout);
    assert_eq!(checked.status("store"), "failed");
    assert!(checked.line("store").contains("postgres:"), "{}", checked.stdout);
    assert_eq!(checked.status("issuer github"), "ok", "{}", checked.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_that_does_not_load_exits_2_naming_the_key() {
    let (mut setup, _github) = with_issuer(NO_ROLES).await;
    setup.section("[vault]\naddress = \"http://127.0.0.1:8200\"\ntoken_envv = \"VAULT_TOKEN\"");
    let checked = setup.check(&[]).await;
    assert_eq!(checked.code, 2, "{}", checked.stderr);
    assert!(checked.stdout.is_empty());
    assert!(checked.stderr.contains("token_envv"), "{}", checked.stderr);
}

const BOUND_ROLE: &str = r#"
roles:
  - name: read-config-bound
    backend: vault
    max_ttl: 5m
    bind_to_address: true
    vault: { policies: [read-config] }
    allow: [ { issuer: github, repository_id: "74" } ]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_role_needs_writing_and_minting_through_bound_token_roles() {
    let bao = Bao::start().await;
    shipped_broker_policy(&bao).await;
    let shipped = crate::support::login_stack::shipped_policy();
    let unbound_only =
        shipped.replace("path \"auth/token/create/ci-creds-job-bound-*\"", "path \"auth/token/create/other-*\"");
    assert_ne!(unbound_only, shipped);
    bao.put_policy("broker-unbound-only", &unbound_only).await;

    let token = broker_token(&bao, &["ci-creds-broker"]).await;
    let checked = with_vault_and_policy(&bao, &token, BOUND_ROLE).await.check(&[]).await;
    assert_eq!(checked.status("vault capabilities"), "ok", "the shipped policy suffices: {}", checked.stdout);
    assert!(
        checked.line("vault capabilities").contains("auth/token/create/ci-creds-job-bound-192-0-2-1-32"),
        "{}",
        checked.stdout
    );

    let token = broker_token(&bao, &["broker-unbound-only"]).await;
    let checked = with_vault_and_policy(&bao, &token, BOUND_ROLE).await.check(&[]).await;
    assert_eq!(checked.status("vault capabilities"), "failed", "{}", checked.stdout);
    assert!(
        checked
            .line("vault capabilities")
            .contains("token lacks update on auth/token/create/ci-creds-job-bound-192-0-2-1-32"),
        "{}",
        checked.stdout
    );

    let checked =
        with_vault_and_policy(&bao, &token, &BOUND_ROLE.replace("bind_to_address: true", "bind_to_address: false"))
            .await
            .check(&[])
            .await;
    assert_eq!(checked.status("vault capabilities"), "ok", "unbound roles ask nothing more: {}", checked.stdout);
}
