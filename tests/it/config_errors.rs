//! `ci-creds serve` with a bad config or policy exits non-zero, naming what is wrong.

use std::process::Command;

use crate::support;

const GOOD_ISSUER: &str =
    "[[issuers]]\nname = \"github\"\nkind = \"github\"\nissuer = \"https://token.actions.githubusercontent.com\"\n";
const HEAD: &str = "listen = \"127.0.0.1:0\"\naudience = \"https://ci-creds.example\"\npolicy_dir = \"policy\"\n[store]\nurl = \"sqlite://ci-creds.db\"\n";
const POLICY: &str = "roles:\n  - name: r\n    backend: vault\n    max_ttl: 5m\n    vault: { policies: [p] }\n    allow:\n      - issuer: github\n";

/// A `[ci_api.<issuer>]` table with `keys`.
fn ci_api(issuer: &str, keys: &str) -> String {
    format!("[ci_api.{issuer}]\napi_url = \"https://api.github.com\"\n{keys}\n")
}

/// Runs `serve` on `config` (and `policy` as policy/roles.yaml); returns exit success and stderr.
fn serve(config: &str, policy: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policy")).unwrap();
    std::fs::write(dir.path().join("policy/roles.yaml"), policy).unwrap();
    std::fs::write(dir.path().join("config.toml"), config).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ci-creds"))
        .args(["serve", "--config"])
        .arg(dir.path().join("config.toml"))
        .env("CONFIG_TEST_VAULT_TOKEN", "not-a-real-token")
        .env("CONFIG_TEST_PADDED_SECRET", " padded-secret\n")
        .env_remove("VAULT_TOKEN")
        .output()
        .unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn names_the_bad_key() {
    let vault = "[vault]\naddress = \"http://127.0.0.1:1\"\ntoken_env = \"CONFIG_TEST_VAULT_TOKEN\"\n";
    let cases = [
        ("unknown key", format!("{HEAD}colour = \"blue\"\n{GOOD_ISSUER}{vault}"), "colour"),
        ("no issuers", format!("{HEAD}issuers = []\n{vault}"), "issuers"),
        (
            "a trusted proxy that is not a CIDR",
            format!("trusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/33\"]\n{HEAD}{GOOD_ISSUER}{vault}"),
            "trusted_proxies[1]",
        ),
        (
            "plain http issuer",
            format!("{HEAD}{}{vault}", GOOD_ISSUER.replace("https://token.actions", "http://token.actions")),
            "issuers[0].issuer",
        ),
        (
            "unknown kind",
            format!("{HEAD}{}{vault}", GOOD_ISSUER.replace("kind = \"github\"", "kind = \"teamcity\"")),
            "teamcity",
        ),
        (
            "a claim name for a role the CI does not have",
            format!(
                "{HEAD}{}[issuers.claim_names]\nrepository = \"repo\"\n{vault}",
                GOOD_ISSUER.replace("kind = \"github\"", "kind = \"jenkins\"")
            ),
            "issuers[0].claim_names.repository",
        ),
        (
            "a controller URL on an issuer that is not Jenkins'",
            format!("{HEAD}{GOOD_ISSUER}controller_url = \"https://jenkins.example.com/\"\n{vault}"),
            "issuers[0].controller_url",
        ),
        (
            "a Jenkins controller URL that is not its root",
            format!(
                "{HEAD}{}controller_url = \"https://jenkins.example.com/jenkins\"\n{vault}",
                GOOD_ISSUER.replace("kind = \"github\"", "kind = \"jenkins\"")
            ),
            "issuers[0].controller_url",
        ),
        (
            "Jenkins API without its user",
            format!(
                "{HEAD}{}{vault}{}",
                GOOD_ISSUER.replace("kind = \"github\"", "kind = \"jenkins\""),
                ci_api("github", "token_env = \"T\"")
            ),
            "ci_api.github.user",
        ),
        (
            "a user for an API that takes a token alone",
            format!("{HEAD}{GOOD_ISSUER}{vault}{}", ci_api("github", "token_env = \"T\"\nuser = \"me\"")),
            "ci_api.github.user",
        ),
        (
            "Jenkins webhook with a token instead of credentials",
            format!(
                "{HEAD}{}{vault}[webhooks.jenkins]\nissuer = \"github\"\ntoken_env = \"T\"\n",
                GOOD_ISSUER.replace("kind = \"github\"", "kind = \"jenkins\"")
            ),
            "webhooks.jenkins.token_env",
        ),
        ("symmetric alg", format!("{HEAD}{GOOD_ISSUER}algorithms = [\"HS256\"]\n{vault}"), "issuers[0].algorithms"),
        (
            "plain http vault",
            format!("{HEAD}{GOOD_ISSUER}{}", vault.replace("127.0.0.1:1", "vault.example")),
            "vault.address",
        ),
        (
            "token env unset",
            format!("{HEAD}{GOOD_ISSUER}{}", vault.replace("CONFIG_TEST_VAULT_TOKEN", "UNSET_TOKEN_VAR")),
            "vault.token_env",
        ),
        (
            "a mint grace no longer than a Vault call may take",
            format!("{HEAD}{GOOD_ISSUER}{vault}timeout_seconds = 10\nmint_grace_seconds = 10\n"),
            "vault.mint_grace_seconds",
        ),
        (
            "a mint grace of more than ten minutes",
            format!("{HEAD}{GOOD_ISSUER}{vault}mint_grace_seconds = 601\n"),
            "vault.mint_grace_seconds",
        ),
        ("not sqlite", format!("{}{GOOD_ISSUER}{vault}", HEAD.replace("sqlite://", "mysql://")), "store.url"),
        ("vault role without [vault]", format!("{HEAD}{GOOD_ISSUER}"), "[vault]"),
        (
            "runner records kept too briefly for single use",
            format!("{HEAD}{GOOD_ISSUER}{vault}[lifecycle]\nrunner_retention = \"1h\"\n"),
            "lifecycle.runner_retention",
        ),
        (
            "CI API of no issuer",
            format!("{HEAD}{GOOD_ISSUER}{vault}{}", ci_api("gitlab", "token_env = \"T\"")),
            "ci_api.gitlab",
        ),
        (
            "CI API of a CircleCI issuer",
            format!(
                "{HEAD}{}{vault}{}",
                GOOD_ISSUER.replace("kind = \"github\"", "kind = \"circleci\""),
                ci_api("github", "token_env = \"T\"")
            ),
            "ci_api.github",
        ),
        (
            "CI API with an App and a token",
            format!(
                "{HEAD}{GOOD_ISSUER}{vault}{}",
                ci_api("github", "app_id = \"1\"\nprivate_key_env = \"K\"\ntoken_env = \"T\"")
            ),
            "ci_api.github.token_env",
        ),
        (
            "CI API with no credential",
            format!("{HEAD}{GOOD_ISSUER}{vault}{}", ci_api("github", "")),
            "ci_api.github.token_env",
        ),
        (
            "CI API App id not numeric",
            format!("{HEAD}{GOOD_ISSUER}{vault}{}", ci_api("github", "app_id = \"my-app\"\nprivate_key_env = \"K\"")),
            "ci_api.github.app_id",
        ),
        (
            "CI API token unset",
            format!("{HEAD}{GOOD_ISSUER}{vault}{}", ci_api("github", "token_env = \"UNSET_CI_API_TOKEN\"")),
            "ci_api.github.token_env",
        ),
        (
            "CI API on plain http",
            format!(
                "{HEAD}{GOOD_ISSUER}{vault}{}",
                ci_api("github", "token_env = \"T\"").replace("https://api.github.com", "http://api.github.com")
            ),
            "ci_api.github.api_url",
        ),
        (
            "webhook secret with whitespace around it",
            format!(
                "{HEAD}{GOOD_ISSUER}{vault}[webhooks.github]\nissuer = \"github\"\nsecret_env = \"CONFIG_TEST_PADDED_SECRET\"\n"
            ),
            "webhooks.github.secret_env",
        ),
        (
            "webhook with another CI's secret key",
            format!(
                "{HEAD}{GOOD_ISSUER}{vault}[webhooks.github]\nissuer = \"github\"\ntoken_env = \"CONFIG_TEST_VAULT_TOKEN\"\n"
            ),
            "webhooks.github.token_env",
        ),
        (
            "webhook of an issuer not configured",
            format!("{HEAD}{GOOD_ISSUER}{vault}[webhooks.travis]\nissuer = \"travis\"\nsecret_env = \"X\"\n"),
            "webhooks.travis.issuer",
        ),
        (
            "webhook name that is no path segment",
            format!("{HEAD}{GOOD_ISSUER}{vault}[webhooks.\"a/b\"]\nissuer = \"github\"\nsecret_env = \"X\"\n"),
            "webhooks.\"a/b\"",
        ),
        (
            "CI API zero budget",
            format!("{HEAD}{GOOD_ISSUER}{vault}{}", ci_api("github", "token_env = \"T\"\nmax_calls_per_minute = 0")),
            "ci_api.github.max_calls_per_minute",
        ),
    ];
    for (what, config, key) in cases {
        let (ok, stderr) = serve(&config, POLICY);
        assert!(!ok, "{what}: must exit non-zero");
        assert!(stderr.contains(key), "{what}: stderr names `{key}`: {stderr}");
    }
}

#[test]
fn names_the_policy_file_and_line() {
    let vault = "[vault]\naddress = \"http://127.0.0.1:1\"\ntoken_env = \"CONFIG_TEST_VAULT_TOKEN\"\n";
    let bad =
        POLICY.replace("      - issuer: github\n", "      - issuer: github\n        sub: repo:octo-org/octo-repo\n");
    let (ok, stderr) = serve(&format!("{HEAD}{GOOD_ISSUER}{vault}"), &bad);
    assert!(!ok);
    assert!(stderr.contains("roles.yaml:8"), "file and line of the `sub` condition: {stderr}");
}

#[test]
fn refuses_to_start_on_an_allow_rule_without_issuer() {
    let vault = "[vault]\naddress = \"http://127.0.0.1:1\"\ntoken_env = \"CONFIG_TEST_VAULT_TOKEN\"\n";
    let unbound = POLICY.replace("      - issuer: github\n", "      - repository: octo-org/octo-repo\n");
    let (ok, stderr) = serve(&format!("{HEAD}{GOOD_ISSUER}{vault}"), &unbound);
    assert!(!ok, "the broker must not start");
    assert!(stderr.contains("roles.yaml: role `r`, allow rule 1 names no `issuer`"), "{stderr}");
    assert!(stderr.contains("hint: add `issuer: <name>`"), "{stderr}");
}

/// `serve --check-config` against a real setup: ok while Vault answers, a failure naming Vault
/// when it does not; either way it exits instead of serving.
#[tokio::test(flavor = "multi_thread")]
async fn check_config_checks_connectivity_and_exits() {
    let stack = support::stack::Stack::start().await;
    let check = || {
        Command::new(env!("CARGO_BIN_EXE_ci-creds"))
            .args(["serve", "--check-config", "--config"])
            .arg(stack.broker.config_dir().join("config.toml"))
            .env("TEST_VAULT_TOKEN", support::bao::ROOT_TOKEN)
            .env("TEST_GITHUB_WEBHOOK_SECRET", "s")
            .env("TEST_GITLAB_WEBHOOK_TOKEN", "t")
            .env("TEST_BUILDKITE_WEBHOOK_TOKEN", "u")
            .output()
            .unwrap()
    };
    let ok = check();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let summary = String::from_utf8_lossy(&ok.stdout);
    assert!(summary.contains("config ok: 3 issuer(s)") && summary.contains("vault"), "{summary}");

    stack.vault_proxy.set(support::proxy::Mode::Refuse);
    let down = check();
    assert!(!down.status.success(), "Vault unreachable must fail the check");
    assert!(String::from_utf8_lossy(&down.stderr).contains("vault"), "{}", String::from_utf8_lossy(&down.stderr));
}
