//! `[webhooks.<name>]` tables: which names and issuers the config takes, and what each endpoint
//! serves.

use std::path::Path;

use super::*;

const HEAD: &str = r#"
listen = "127.0.0.1:8080"
audience = "https://ci-creds.example"
policy_dir = "policy"
[store]
url = "sqlite://ci-creds.db"
[[issuers]]
name = "jenkins"
kind = "jenkins"
issuer = "https://jenkins.example.com/oidc"
[[issuers]]
name = "jenkins-teams"
kind = "jenkins"
issuer = "https://jenkins.example.com/oidc/job/teams"
[[issuers]]
name = "github"
kind = "github"
issuer = "https://token.actions.githubusercontent.com"
"#;

fn parse(webhooks: &str) -> Result<Config, Error> {
    Config::parse(&format!("{HEAD}{webhooks}"), Path::new("/etc/ci-creds/ci-creds.toml"))
}

/// The key and message of a refused config.
fn refusal(webhooks: &str) -> (String, String) {
    match parse(webhooks) {
        Err(Error::Invalid { key, message }) => (key, message),
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("accepted:\n{webhooks}"),
    }
}

fn table(name: &str, issuer: &str) -> String {
    format!("[webhooks.{name}]\nissuer = \"{issuer}\"\ncredentials_env = \"HOOK_CREDENTIALS\"\n")
}

#[test]
fn two_tables_may_name_issuers_of_one_ci_each_served_at_its_own_name() {
    let config = parse(&format!("{}{}", table("jenkins", "jenkins"), table("jenkins-teams", "jenkins-teams"))).unwrap();
    let served: Vec<(&str, &str, Option<CiKind>)> = config
        .webhooks
        .iter()
        .map(|(name, table)| (name.as_str(), table.issuer.as_str(), config.kind_of(&table.issuer)))
        .collect();
    assert_eq!(
        served,
        [("jenkins", "jenkins", Some(CiKind::Jenkins)), ("jenkins-teams", "jenkins-teams", Some(CiKind::Jenkins))]
    );
    // Any name of letters, digits, `-` and `_`; two tables may even name one issuer (a second
    // secret while the first is rotated out).
    assert!(parse(&format!("{}{}", table("Teams_2", "jenkins"), table("teams-3", "jenkins"))).is_ok());
}

#[test]
fn a_name_that_is_not_letters_digits_dashes_and_underscores_is_refused_naming_the_key() {
    for name in [r#""teams.prod""#, r#""teams/prod""#, r#""teams prod""#, r#""équipe""#, r#""""#, r#""a%2Fb""#] {
        let (key, message) = refusal(&table(name, "jenkins-teams"));
        let unquoted = name.trim_matches('"');
        assert_eq!(key, format!("webhooks.{unquoted:?}"), "{name}");
        assert!(message.contains("letters, digits, `-` and `_`"), "{name}: {message}");
    }
}

#[test]
fn an_issuer_that_is_not_configured_is_refused() {
    let (key, message) = refusal(&table("jenkins-teams", "jenkins-team"));
    assert_eq!(
        (key.as_str(), message.as_str()),
        ("webhooks.jenkins-teams.issuer", "no issuer is named `jenkins-team`")
    );
    // As before tables were named: `issuer` is required.
    match parse("[webhooks.teams]\ncredentials_env = \"HOOK_CREDENTIALS\"\n") {
        Err(Error::Parse { message, .. }) => assert!(message.contains("missing field `issuer`"), "{message}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn the_secret_key_is_the_one_the_issuers_ci_takes() {
    let (key, message) = refusal("[webhooks.jenkins-teams]\nissuer = \"jenkins-teams\"\nsecret_env = \"S\"\n");
    assert_eq!(key, "webhooks.jenkins-teams.secret_env");
    assert!(message.contains("take `credentials_env`"), "{message}");
    let (key, _) = refusal("[webhooks.actions]\nissuer = \"github\"\ncredentials_env = \"S\"\n");
    assert_eq!(key, "webhooks.actions.credentials_env");
    assert!(parse("[webhooks.actions]\nissuer = \"github\"\nsecret_env = \"S\"\n").is_ok());
    let (key, message) = refusal("[webhooks.teams]\nissuer = \"jenkins-teams\"\n");
    assert_eq!(
        (key.as_str(), message.as_str()),
        ("webhooks.teams.credentials_env", "is required: the env var holding the webhook's secret")
    );
}

#[test]
fn a_table_named_after_a_ci_still_takes_only_that_cis_issuers() {
    let (key, message) = refusal(&table("jenkins", "github"));
    assert_eq!((key.as_str(), message.as_str()), ("webhooks.jenkins.issuer", "`github` is not a jenkins issuer"));
    let (key, message) = refusal("[webhooks.github]\nissuer = \"jenkins-teams\"\nsecret_env = \"S\"\n");
    assert_eq!((key.as_str(), message.as_str()), ("webhooks.github.issuer", "`jenkins-teams` is not a github issuer"));
    assert!(parse(&table("jenkins", "jenkins-teams")).is_ok(), "any issuer of that CI");
}
