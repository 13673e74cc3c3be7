//! `[vault.auth]` and `[vault] token_role`: what each login method takes, and the key a refusal
//! names.

use std::path::{Path, PathBuf};

use super::*;
use crate::backends::{KUBERNETES_TOKEN_FILE, LoginMethod, SecretIdSource};

const HEAD: &str = r#"
listen = "127.0.0.1:8080"
audience = "https://ci-creds.example"
policy_dir = "policy"
[store]
url = "sqlite://ci-creds.db"
[[issuers]]
name = "github"
kind = "github"
issuer = "https://token.actions.githubusercontent.com"
[vault]
address = "https://vault.example"
"#;

fn parse(vault: &str) -> Result<Config, Error> {
    Config::parse(&format!("{HEAD}{vault}"), Path::new("/etc/ci-creds/ci-creds.toml"))
}

fn method(vault: &str) -> LoginMethod {
    let config = parse(vault).unwrap_or_else(|e| panic!("refused: {e}\n{vault}"));
    config.vault.expect("[vault]").login_method().expect("checked at load")
}

/// The key and message of a refused config.
fn refusal(vault: &str) -> (String, String) {
    match parse(vault) {
        Err(Error::Invalid { key, message }) => (key, message),
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("accepted:\n{vault}"),
    }
}

#[test]
fn a_config_without_vault_auth_logs_in_with_the_token_from_token_env() {
    assert_eq!(method(""), LoginMethod::Token);
    assert_eq!(method("token_env = \"BROKER_VAULT_TOKEN\"\n[vault.auth]\nmethod = \"token\"\n"), LoginMethod::Token);
}

#[test]
fn approle_takes_its_role_id_and_a_secret_id_from_env_or_file_on_the_default_mount() {
    let approle = "token_role = \"ci-creds-job\"\n[vault.auth]\nmethod = \"approle\"\nrole_id_env = \"ROLE_ID\"\n";
    assert_eq!(
        method(&format!("{approle}secret_id_env = \"SECRET_ID\"\n")),
        LoginMethod::AppRole {
            mount: "approle".into(),
            role_id_env: "ROLE_ID".into(),
            secret_id: SecretIdSource::Env("SECRET_ID".into())
        }
    );
    assert_eq!(
        method(&format!("{approle}secret_id_file = \"/run/secrets/secret-id\"\nmount = \"/ci/approle/\"\n")),
        LoginMethod::AppRole {
            mount: "ci/approle".into(),
            role_id_env: "ROLE_ID".into(),
            secret_id: SecretIdSource::File(PathBuf::from("/run/secrets/secret-id"))
        }
    );
}

#[test]
fn kubernetes_takes_a_role_and_reads_the_pods_service_account_token_by_default() {
    let kubernetes = "token_role = \"ci-creds-job\"\n[vault.auth]\nmethod = \"kubernetes\"\nrole = \"ci-creds\"\n";
    assert_eq!(
        method(kubernetes),
        LoginMethod::Kubernetes {
            mount: "kubernetes".into(),
            role: "ci-creds".into(),
            token_file: PathBuf::from(KUBERNETES_TOKEN_FILE)
        }
    );
    assert_eq!(
        method(&format!("{kubernetes}token_file = \"/var/run/secrets/vault/token\"\nmount = \"k8s-prod\"\n")),
        LoginMethod::Kubernetes {
            mount: "k8s-prod".into(),
            role: "ci-creds".into(),
            token_file: PathBuf::from("/var/run/secrets/vault/token")
        }
    );
}

#[test]
fn each_refusal_names_the_key_at_fault() {
    let approle = "token_role = \"ci-creds-job\"\n[vault.auth]\nmethod = \"approle\"\n";
    let kubernetes = "token_role = \"ci-creds-job\"\n[vault.auth]\nmethod = \"kubernetes\"\n";
    let cases: &[(&str, String, &str, &str)] = &[
        (
            "an unknown method",
            "[vault.auth]\nmethod = \"ldap\"\n".into(),
            "vault.auth.method",
            "`ldap` is not a login method",
        ),
        (
            "approle without a role id",
            format!("{approle}secret_id_env = \"S\"\n"),
            "vault.auth.role_id_env",
            "is required",
        ),
        (
            "approle without a secret id",
            format!("{approle}role_id_env = \"R\"\n"),
            "vault.auth.secret_id_env",
            "needs secret_id_env or secret_id_file",
        ),
        (
            "approle with two secret ids",
            format!("{approle}role_id_env = \"R\"\nsecret_id_env = \"S\"\nsecret_id_file = \"/s\"\n"),
            "vault.auth.secret_id_file",
            "not both",
        ),
        (
            "an empty role id env",
            format!("{approle}role_id_env = \" \"\nsecret_id_env = \"S\"\n"),
            "vault.auth.role_id_env",
            "is required",
        ),
        (
            "approle with the kubernetes role",
            format!("{approle}role_id_env = \"R\"\nsecret_id_env = \"S\"\nrole = \"x\"\n"),
            "vault.auth.role",
            "not used with method = \"approle\"",
        ),
        ("kubernetes without its role", kubernetes.into(), "vault.auth.role", "is required"),
        (
            "kubernetes with a secret id",
            format!("{kubernetes}role = \"r\"\nsecret_id_env = \"S\"\n"),
            "vault.auth.secret_id_env",
            "not used with method = \"kubernetes\"",
        ),
        (
            "kubernetes with an empty token file",
            format!("{kubernetes}role = \"r\"\ntoken_file = \"\"\n"),
            "vault.auth.token_file",
            "must not be empty",
        ),
        (
            "a mount climbing out of auth/",
            format!("{kubernetes}role = \"r\"\nmount = \"../sys\"\n"),
            "vault.auth.mount",
            "below auth/",
        ),
        (
            "a mount with a query",
            format!("{kubernetes}role = \"r\"\nmount = \"k8s?x=1\"\n"),
            "vault.auth.mount",
            "below auth/",
        ),
        ("an empty mount", format!("{kubernetes}role = \"r\"\nmount = \"/\"\n"), "vault.auth.mount", "below auth/"),
        (
            "the token method with a role",
            "[vault.auth]\nrole = \"r\"\n".into(),
            "vault.auth.role",
            "not used with method = \"token\"",
        ),
        (
            "a login method without a token role",
            "[vault.auth]\nmethod = \"kubernetes\"\nrole = \"r\"\n".into(),
            "vault.token_role",
            "die when it expires",
        ),
        (
            "a token role that is a path",
            "token_role = \"../create-orphan\"\n".into(),
            "vault.token_role",
            "must be a Vault role name",
        ),
        ("an empty token role", "token_role = \"\"\n".into(), "vault.token_role", "must be a Vault role name"),
    ];
    for (what, vault, key, message) in cases {
        let (got_key, got_message) = refusal(vault);
        assert_eq!(got_key, *key, "{what}: {got_message}");
        assert!(got_message.contains(message), "{what}: {got_message}");
    }
}

#[test]
fn an_unknown_key_in_vault_auth_is_refused_by_name() {
    match parse("[vault.auth]\nmethod = \"approle\"\nsecret_id = \"inline\"\n") {
        Err(Error::Parse { message, .. }) => assert!(message.contains("secret_id"), "{message}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn a_token_role_is_taken_with_the_token_method_too() {
    let config = parse("token_role = \"ci-creds-job.v2\"\n").unwrap();
    assert_eq!(config.vault.unwrap().token_role.as_deref(), Some("ci-creds-job.v2"));
}

#[test]
fn a_login_file_is_read_at_start_by_the_rule_env_secrets_follow_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    let config = |path: &Path| {
        parse(&format!(
            "token_role = \"ci-creds-job\"\n[vault.auth]\nmethod = \"kubernetes\"\nrole = \"r\"\ntoken_file = \"{}\"\n",
            path.display()
        ))
        .unwrap()
    };
    let credentials = |path: &Path| config(path).vault.unwrap().credentials().map(|_| ());

    let (key, message) = credentials(&file).unwrap_err();
    assert_eq!(key, "vault.auth.token_file");
    assert!(message.contains("cannot read"), "{message}");
    std::fs::write(&file, "eyJhbGciOiJSUzI1NiJ9.e30.c2ln\n").unwrap();
    assert!(credentials(&file).is_ok(), "one trailing newline is not part of the token");
    for refused in ["", "\n", " eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln\n\n"] {
        std::fs::write(&file, refused).unwrap();
        let (key, message) = credentials(&file).unwrap_err();
        assert_eq!(key, "vault.auth.token_file", "{refused:?}");
        assert!(message.contains(&file.display().to_string()), "{message}");
        assert!(!message.contains("eyJ"), "the file's content is never shown: {message}");
    }
}
