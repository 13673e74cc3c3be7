//! CircleCI: its claims as the broker maps them, from the fixture of job 8b91f9a8…, and no job
//! locator, since the broker asks no CircleCI API.

use serde_json::{Value, json};

use super::claims::SSH_RERUN_EVENT;
use crate::ci::CiKind;
use crate::ci::test_support::fixture;
use crate::ci::test_support::locator_job as job;
use crate::ci::{ClaimsError, Issuer, JobLocator};
use crate::ci::{DangerousTrigger, Job};

fn claims(ssh_rerun: Option<Value>) -> Value {
    let mut claims: Value = serde_json::from_slice(&fixture("circleci-token-claims.json")).unwrap();
    let object = claims.as_object_mut().unwrap();
    match ssh_rerun {
        Some(value) => object.insert("oidc.circleci.com/ssh-rerun".into(), value),
        None => object.remove("oidc.circleci.com/ssh-rerun"),
    };
    claims
}

fn map(claims: &Value) -> Result<Job, ClaimsError> {
    CiKind::Circleci.ci().job(&Issuer::named("circleci"), claims)
}

#[test]
fn an_ordinary_run_has_no_event_and_no_dangerous_trigger() {
    for ssh_rerun in [Some(json!(false)), None] {
        let job = map(&claims(ssh_rerun.clone())).unwrap();
        assert_eq!(job.job_id, "8b91f9a8-7975-4e60-916c-f0152ccbc937");
        assert_eq!(job.repository, "github.com/circleci/webhook-service");
        assert_eq!((job.event, job.dangerous_trigger), (None, None), "ssh-rerun {ssh_rerun:?}");
    }
}

#[test]
fn a_rerun_with_ssh_is_the_dangerous_trigger_ssh_rerun() {
    let job = map(&claims(Some(json!(true)))).unwrap();
    assert_eq!(job.event.as_deref(), Some(SSH_RERUN_EVENT));
    assert_eq!(job.dangerous_trigger, Some(DangerousTrigger::Event("ssh_rerun".into())));
    assert_eq!(job.git_ref.as_deref(), Some("refs/heads/main"), "the rest maps as for any run");
}

#[test]
fn an_ssh_rerun_claim_that_is_not_a_boolean_is_refused() {
    for value in [json!("true"), json!(1), json!(null)] {
        assert!(matches!(map(&claims(Some(value.clone()))), Err(ClaimsError::WrongType(_))), "{value}");
    }
}

#[test]
fn a_token_without_the_coordinates_gives_no_locator() {
    assert!(JobLocator::of(&job(CiKind::Circleci, "o/p", json!({}))).is_err());
}
