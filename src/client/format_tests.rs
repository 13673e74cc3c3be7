//! Each format rendered from answers shaped like the API's, with the credentials the Vault, AWS
//! and GitHub backends hand out.

use secrecy::ExposeSecret;
use serde_json::{Value, json};

use super::{Rendered, render};
use crate::ci::CiKind;
use crate::client::answer::Answer;
use crate::client::{Error, Format};

fn vault(role: &str, token: &str) -> Value {
    json!({"role": role, "backend": "vault", "lease_id": "l-1", "expires_at": "2026-11-29T22:10:00Z",
           "vault": {"address": "https://vault.example", "token": token, "accessor": "acc"}})
}

fn aws(role: &str) -> Value {
    json!({"role": role, "backend": "aws", "lease_id": "l-2", "expires_at": "2026-11-29T22:10:00Z",
           "aws": {"access_key_id": "ASIAEXAMPLE", "secret_access_key": "se/cr+et", "session_token": "to'ken", "region": "eu-west-1"}})
}

fn answer(credentials: Vec<Value>) -> Answer {
    let body = json!({"job": {"issuer": "github", "job_id": "1", "repository": "o/r", "ref": "refs/heads/main"},
                      "credentials": credentials});
    Answer::parse(body.to_string().into()).expect("parses")
}

fn text(rendered: &Rendered) -> &str {
    rendered.text.expose_secret()
}

#[test]
fn env_quotes_for_the_shell() {
    let rendered = render(Format::Env, &answer(vec![vault("deploy", "s.tok"), aws("aws-deploy")])).unwrap();
    assert_eq!(
        text(&rendered),
        "export VAULT_ADDR=https://vault.example\nexport VAULT_TOKEN=s.tok\n\
         export AWS_ACCESS_KEY_ID=ASIAEXAMPLE\nexport AWS_SECRET_ACCESS_KEY=se/cr+et\n\
         export AWS_SESSION_TOKEN=\"to'ken\"\nexport AWS_REGION=eu-west-1\nexport AWS_DEFAULT_REGION=eu-west-1\n"
    );
    assert!(rendered.masks.is_none() && rendered.warnings.is_empty());
}

#[test]
fn a_backend_twice_gets_role_suffixes() {
    let rendered = render(Format::Env, &answer(vec![vault("deploy-prod", "a"), vault("read.config", "b")])).unwrap();
    assert_eq!(
        text(&rendered),
        "export VAULT_ADDR_DEPLOY_PROD=https://vault.example\nexport VAULT_TOKEN_DEPLOY_PROD=a\n\
         export VAULT_ADDR_READ_CONFIG=https://vault.example\nexport VAULT_TOKEN_READ_CONFIG=b\n"
    );
}

#[test]
fn github_masks_every_secret() {
    let rendered =
        render(Format::Step(CiKind::Github), &answer(vec![vault("deploy", "s.tok"), aws("aws-deploy")])).unwrap();
    assert_eq!(
        rendered.masks.as_ref().unwrap().expose_secret(),
        "::add-mask::s.tok\n::add-mask::ASIAEXAMPLE\n::add-mask::se/cr+et\n::add-mask::to'ken\n"
    );
    assert!(
        text(&rendered)
            .starts_with("VAULT_ADDR=https://vault.example\nVAULT_TOKEN=s.tok\nAWS_ACCESS_KEY_ID=ASIAEXAMPLE\n")
    );
}

#[test]
fn a_line_break_cannot_smuggle_a_variable() {
    let sneaky = answer(vec![vault("deploy", "s.tok\nNODE_OPTIONS=--require=/tmp/x")]);
    for format in [Format::Step(CiKind::Github), Format::Step(CiKind::Gitlab)] {
        let error = render(format, &sneaky).err().expect("refused");
        assert!(error.to_string().contains("VAULT_TOKEN holds a line break"), "{error}");
        assert!(!error.to_string().contains("s.tok"));
    }
}

#[test]
fn gitlab_dotenv_warns_about_artifacts() {
    let rendered = render(Format::Step(CiKind::Gitlab), &answer(vec![vault("deploy", "s.tok")])).unwrap();
    assert_eq!(text(&rendered), "VAULT_ADDR=https://vault.example\nVAULT_TOKEN=s.tok\n");
    assert!(rendered.warnings[0].contains("stored as a job artifact"));
}

#[test]
fn credential_process_prints_the_aws_document() {
    let rendered =
        render(Format::CredentialProcess, &answer(vec![vault("deploy", "s.tok"), aws("aws-deploy")])).unwrap();
    let document: Value = serde_json::from_str(text(&rendered)).unwrap();
    assert_eq!(
        document,
        json!({"Version": 1, "AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": "se/cr+et",
               "SessionToken": "to'ken", "Expiration": "2026-11-29T22:10:00Z"})
    );
}

#[test]
fn credential_process_needs_exactly_one_aws_credential() {
    for credentials in [vec![vault("deploy", "s.tok")], vec![aws("a"), aws("b")]] {
        let error = render(Format::CredentialProcess, &answer(credentials)).err().expect("refused");
        assert!(matches!(error, Error::Usage(_)));
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("needs exactly one AWS credential"), "{error}");
    }
}

#[test]
fn json_is_the_answer_as_received() {
    let raw = r#"{"job":{"issuer":"g","job_id":"1","repository":"o/r"},"credentials":[],"future_field":1}"#;
    let answer = Answer::parse(raw.to_owned().into()).unwrap();
    assert_eq!(text(&render(Format::Json, &answer).unwrap()), format!("{raw}\n"));
}

fn github(role: &str, token: &str) -> Value {
    json!({"role": role, "backend": "github", "lease_id": "l-3", "expires_at": "2026-11-29T22:10:00Z",
           "github": {"token": token, "expires_at": "2026-11-29T22:10:00Z",
                      "permissions": {"contents": "write"}, "repositories": ["app"]}})
}

#[test]
fn a_github_token_is_gh_token_masked_in_github_actions_and_the_first_of_several_is_plain_too() {
    let one = render(Format::Step(CiKind::Github), &answer(vec![github("release", "ghs_one")])).unwrap();
    assert_eq!(one.masks.as_ref().unwrap().expose_secret(), "::add-mask::ghs_one\n");
    assert_eq!(text(&one), "GH_TOKEN=ghs_one\n");

    let two = render(Format::Env, &answer(vec![github("release-bot", "ghs_a"), github("read", "ghs_b")])).unwrap();
    assert_eq!(text(&two), "export GH_TOKEN_RELEASE_BOT=ghs_a\nexport GH_TOKEN=ghs_a\nexport GH_TOKEN_READ=ghs_b\n");
    let dotenv = render(Format::Step(CiKind::Gitlab), &answer(vec![github("release", "ghs_one")])).unwrap();
    assert_eq!(text(&dotenv), "GH_TOKEN=ghs_one\n");
    assert!(matches!(render(Format::CredentialProcess, &answer(vec![github("r", "ghs_x")])), Err(Error::Usage(_))));
}

#[test]
fn azure_sets_each_variable_by_logging_command_with_secrets_marked() {
    let rendered =
        render(Format::Step(CiKind::AzurePipelines), &answer(vec![vault("deploy", "s.tok"), aws("aws-deploy")]))
            .unwrap();
    assert_eq!(
        text(&rendered),
        "##vso[task.setvariable variable=VAULT_ADDR]https://vault.example\n\
         ##vso[task.setvariable variable=VAULT_TOKEN;issecret=true]s.tok\n\
         ##vso[task.setvariable variable=AWS_ACCESS_KEY_ID;issecret=true]ASIAEXAMPLE\n\
         ##vso[task.setvariable variable=AWS_SECRET_ACCESS_KEY;issecret=true]se/cr+et\n\
         ##vso[task.setvariable variable=AWS_SESSION_TOKEN;issecret=true]to'ken\n\
         ##vso[task.setvariable variable=AWS_REGION]eu-west-1\n\
         ##vso[task.setvariable variable=AWS_DEFAULT_REGION]eu-west-1\n"
    );
    assert!(rendered.masks.is_none() && rendered.warnings.is_empty(), "issecret is the mask");
    assert!(matches!(
        super::Destination::choose(Format::Step(CiKind::AzurePipelines), None),
        Ok(super::Destination::Stdout)
    ));
}

#[test]
fn azure_refuses_a_value_that_would_end_the_command_or_be_decoded() {
    for token in ["s.tok\n##vso[task.prependpath]/tmp/x", "s.tok%0A##vso[task.prependpath]/tmp/x"] {
        let error =
            render(Format::Step(CiKind::AzurePipelines), &answer(vec![vault("deploy", token)])).err().expect("refused");
        assert!(error.to_string().starts_with("VAULT_TOKEN holds a"), "{error}");
        assert!(!error.to_string().contains("s.tok"), "{error}");
    }
}
