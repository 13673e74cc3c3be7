//! `ci-creds get` run as a binary inside a simulated job, against the real broker and OpenBao:
//! each format's exact output, where it goes, and that stderr never holds a secret.

use std::os::unix::fs::PermissionsExt;

use reqwest::Method;

use crate::support;
use crate::support::ci_job::{Proxy, TokenEndpoint, assert_no_secret, ci_creds, err, out};
use crate::support::stack::Stack;
use crate::support::{AUDIENCE, github_token};

/// The Vault token in `line` (after `prefix`), checked against OpenBao: it reads what
/// `deploy-prod` may read.
async fn working_vault_token(stack: &Stack, text: &str, prefix: &str) -> String {
    let token =
        text.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("no {prefix} in {text}")).to_owned();
    let (status, _) = stack.bao.request(Method::GET, "secret/data/deploy/db", &token, None).await;
    assert_eq!(status, 200, "the printed token works");
    token
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread")]
async fn env_format_from_a_github_actions_job() {
    let stack = Stack::start().await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let mut env = endpoint.env();
    env.push(("CI_CREDS_AUDIENCE", AUDIENCE.to_owned()));
    let output = ci_creds(
        &["get", "--broker", &stack.broker.url, "--role", "deploy-prod", "--ttl", "10m", "--format", "env"],
        &env,
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let vault_token = working_vault_token(&stack, &out(&output), "export VAULT_TOKEN=").await;
    assert_eq!(
        out(&output),
        format!("export VAULT_ADDR=http://{}\nexport VAULT_TOKEN={vault_token}\n", &stack.vault_proxy.address[7..])
    );
    assert_eq!(endpoint.audiences(), [AUDIENCE], "one token, for the broker's audience");
    let mut secrets = endpoint.issued();
    secrets.extend([vault_token, support::ci_job::REQUEST_TOKEN.to_owned()]);
    assert_no_secret(&output, &secrets);
    let lease = &stack.leases("github", "289782451").await[0];
    let ttl = lease.expires_at - time::OffsetDateTime::now_utc().unix_timestamp();
    assert!((590..=600).contains(&ttl), "--ttl 10m asked for 600 s, got {ttl}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_format_is_the_brokers_answer_written_to_a_private_file() {
    let stack = Stack::start().await;
    let proxy = Proxy::start(&stack.broker.url, 0).await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("creds.json");
    let output = ci_creds(
        &[
            "get",
            "--broker",
            &proxy.url,
            "--audience",
            AUDIENCE,
            "--role",
            "deploy-prod,read-config",
            "--format",
            "json",
            "--output",
            file.to_str().unwrap(),
        ],
        &endpoint.env(),
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    assert_eq!(out(&output), "", "nothing on stdout with --output");
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written, format!("{}\n", proxy.answers()[0]), "exactly the API answer");
    assert_eq!(mode(&file), 0o600);
    let answer: serde_json::Value = serde_json::from_str(&written).unwrap();
    let tokens: Vec<String> = answer["credentials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["vault"]["token"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tokens.len(), 2);
    let mut secrets = endpoint.issued();
    secrets.extend(tokens);
    assert_no_secret(&output, &secrets);
}

#[tokio::test(flavor = "multi_thread")]
async fn github_format_masks_first_then_appends_to_github_env() {
    let stack = Stack::start().await;
    let endpoint = TokenEndpoint::start(stack.github.clone(), |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let github_env = dir.path().join("github_env");
    std::fs::write(&github_env, "EARLIER_STEP=1\n").unwrap();
    let mut env = endpoint.env();
    env.push(("GITHUB_ENV", github_env.display().to_string()));
    let output = ci_creds(
        &["get", "--broker", &stack.broker.url, "--audience", AUDIENCE, "--role", "deploy-prod", "--format", "github"],
        &env,
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let written = std::fs::read_to_string(&github_env).unwrap();
    let vault_token = working_vault_token(&stack, &written, "VAULT_TOKEN=").await;
    assert_eq!(out(&output), format!("::add-mask::{vault_token}\n"));
    assert_eq!(
        written,
        format!("EARLIER_STEP=1\nVAULT_ADDR={}\nVAULT_TOKEN={vault_token}\n", stack.vault_proxy.address)
    );
    assert_eq!(mode(&github_env), 0o600);
    let mut secrets = endpoint.issued();
    secrets.push(vault_token);
    assert_no_secret(&output, &secrets);
}

#[tokio::test(flavor = "multi_thread")]
async fn gitlab_dotenv_from_an_id_tokens_variable() {
    let stack = Stack::start().await;
    let ci_token = github_token(&stack.github, |_| {});
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ci-creds.env");
    let output = ci_creds(
        &[
            "get",
            "--broker",
            &stack.broker.url,
            "--audience",
            AUDIENCE,
            "--role",
            "deploy-prod",
            "--format",
            "gitlab-dotenv",
            "--output",
            file.to_str().unwrap(),
        ],
        &[("CI_CREDS_ID_TOKEN", ci_token.clone())],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let written = std::fs::read_to_string(&file).unwrap();
    let vault_token = working_vault_token(&stack, &written, "VAULT_TOKEN=").await;
    assert_eq!(written, format!("VAULT_ADDR={}\nVAULT_TOKEN={vault_token}\n", stack.vault_proxy.address));
    assert_eq!(mode(&file), 0o600);
    assert!(err(&output).contains("warning: a dotenv report is stored as a job artifact"), "{}", err(&output));
    assert_no_secret(&output, &[ci_token, vault_token]);
}

#[tokio::test(flavor = "multi_thread")]
async fn credential_process_with_only_vault_credentials_is_a_usage_error() {
    let stack = Stack::start().await;
    let ci_token = github_token(&stack.github, |_| {});
    let output = ci_creds(
        &[
            "get",
            "--broker",
            &stack.broker.url,
            "--audience",
            AUDIENCE,
            "--role",
            "deploy-prod",
            "--format",
            "credential-process",
        ],
        &[("CI_CREDS_TOKEN", ci_token.clone())],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(out(&output), "");
    assert!(
        err(&output).contains(
            "--format credential-process needs exactly one AWS credential, the broker granted 0: deploy-prod (vault)"
        ),
        "{}",
        err(&output)
    );
    assert_no_secret(&output, &[ci_token]);
}
