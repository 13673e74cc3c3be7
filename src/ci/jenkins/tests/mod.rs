//! Jenkins' claims, Notification deliveries and API answers as the broker reads them, from the
//! fixtures of build 42 of `octo-org/octo-repo/main`. Here its claims; beside, one file a concern.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::fixture;
use crate::ci::{ClaimsError, Issuer};
use crate::ci::{DangerousTrigger, FactSource, RunnerKey};

mod api;
mod head;
mod webhook;

const BUILD_URL: &str = "https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/42/";

fn claims() -> Value {
    serde_json::from_slice(&fixture("jenkins-token-claims.json")).unwrap()
}

fn with(mut claims: Value, pairs: &[(&str, Value)]) -> Value {
    for (name, value) in pairs {
        match value {
            Value::Null => claims.as_object_mut().unwrap().remove(*name),
            value => claims.as_object_mut().unwrap().insert((*name).to_owned(), value.clone()),
        };
    }
    claims
}

fn map(claims: &Value) -> Result<crate::ci::Job, ClaimsError> {
    CiKind::Jenkins.ci().job(&Issuer::named("jenkins"), claims)
}

#[test]
fn a_multibranch_build_is_its_job_s_build_in_the_project_s_repository_on_its_branch() {
    let job = map(&claims()).unwrap();
    assert_eq!(job.job_id, "octo-org/octo-repo/main#42");
    assert_eq!(job.job_name.as_deref(), Some("octo-org/octo-repo/main"));
    assert_eq!(job.run_id.as_deref(), Some("42"));
    assert_eq!(job.repository, "octo-org/octo-repo");
    assert_eq!(job.git_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(job.ref_type.as_deref(), Some("branch"));
    assert_eq!((job.event, job.dangerous_trigger), (None, None));
    assert_eq!(job.runner_environment.as_deref(), Some("self-hosted"));
    assert_eq!(job.runner_key_by, RunnerKey::Name);
}

#[test]
fn with_the_default_templates_the_repository_is_the_job_s_full_name() {
    let defaults = with(claims(), &[("branch", Value::Null), ("commit", Value::Null), ("build_url", Value::Null)]);
    let job = map(&defaults).unwrap();
    assert_eq!(
        (job.job_id.as_str(), job.repository.as_str()),
        ("octo-org/octo-repo/main#42", "octo-org/octo-repo/main")
    );
    assert_eq!(job.git_ref, None);
    let as_string = with(defaults, &[("build_number", json!("42"))]);
    assert_eq!(map(&as_string).unwrap().run_id.as_deref(), Some("42"));
}

#[test]
fn a_branch_named_with_a_slash_comes_out_whole_and_a_branch_the_url_does_not_name_is_refused() {
    let sub = "https://jenkins.example.com/job/octo-org/job/octo-repo/job/feature%252Fx/";
    let job = map(&with(claims(), &[("sub", json!(sub)), ("branch", json!("feature/x"))])).unwrap();
    assert_eq!(job.job_id, "octo-org/octo-repo/feature%2Fx#42");
    assert_eq!((job.repository.as_str(), job.git_ref.as_deref()), ("octo-org/octo-repo", Some("refs/heads/feature/x")));

    for (sub, branch) in [
        ("https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/", "release"),
        (sub, "feature%2Fx"),
        ("https://jenkins.example.com/job/main/", "main"),
    ] {
        let refused = map(&with(claims(), &[("sub", json!(sub)), ("branch", json!(branch))]));
        assert!(matches!(refused, Err(ClaimsError::Refused(_))), "{sub} {branch}: {refused:?}");
    }
}

#[test]
fn a_token_that_names_no_job_below_its_controller_is_refused() {
    for sub in [
        "https://jenkins.example.com/",
        "https://jenkins.example.com",
        "https://other.example.com/job/octo-org/job/octo-repo/job/main/",
        "https://jenkins.example.com.evil.com/job/octo-org/job/octo-repo/job/main/",
        "http://jenkins.example.com/job/octo-org/job/octo-repo/job/main/",
        "https://jenkins.example.com/job/octo-org/job/../job/main/",
    ] {
        let refused = map(&with(claims(), &[("sub", json!(sub))]));
        assert!(matches!(refused, Err(ClaimsError::Refused(_))), "{sub}: {refused:?}");
    }
    let outside_a_build = with(claims(), &[("build_number", Value::Null)]);
    assert!(matches!(map(&outside_a_build), Err(ClaimsError::Refused(_))));
    for wrong in [json!(-1), json!(4.2), json!("4x"), json!(""), json!(true)] {
        let refused = map(&with(claims(), &[("build_number", wrong.clone())]));
        assert!(matches!(refused, Err(ClaimsError::WrongType(_))), "{wrong}: {refused:?}");
    }
}

#[test]
fn a_custom_issuer_uri_speaks_for_the_controller_its_issuer_names() {
    let custom = with(claims(), &[("iss", json!("https://oidc.example.com/jenkins"))]);
    let refused = map(&custom);
    assert!(matches!(&refused, Err(ClaimsError::Refused(why)) if why.contains("controller_url")), "{refused:?}");
    let names = BTreeMap::new();
    let issuer = Issuer { name: "jenkins", claim_names: &names, controller_url: Some("https://jenkins.example.com/") };
    let job = CiKind::Jenkins.ci().job(&issuer, &custom).unwrap();
    assert_eq!((job.job_id.as_str(), job.repository.as_str()), ("octo-org/octo-repo/main#42", "octo-org/octo-repo"));
    let other_controller = Issuer { controller_url: Some("https://ci.example.com/"), ..issuer };
    assert!(matches!(CiKind::Jenkins.ci().job(&other_controller, &custom), Err(ClaimsError::Refused(_))));
}

#[test]
fn a_folder_s_issuer_speaks_only_for_the_jobs_inside_its_folder() {
    let folder = "https://jenkins.example.com/oidc/job/octo-org";
    assert!(map(&with(claims(), &[("iss", json!(folder))])).is_ok());
    let elsewhere = with(
        claims(),
        &[
            ("iss", json!("https://jenkins.example.com/oidc/job/octo-org")),
            ("sub", json!("https://jenkins.example.com/job/other-org/job/octo-repo/job/main/")),
        ],
    );
    assert!(matches!(map(&elsewhere), Err(ClaimsError::Refused(_))));
}

#[test]
fn a_change_request_build_is_a_dangerous_trigger_with_no_branch_ref() {
    let sub = "https://jenkins.example.com/job/octo-org/job/octo-repo/job/PR-7/";
    for extra in [("change_id", json!("7")), ("change_fork", json!("mallory"))] {
        let job = map(&with(claims(), &[("sub", json!(sub)), ("branch", json!("PR-7")), extra.clone()])).unwrap();
        assert_eq!(job.event.as_deref(), Some("change_request"), "{extra:?}");
        assert_eq!(job.dangerous_trigger, Some(DangerousTrigger::Event("change_request".into())));
        assert_eq!(job.git_ref, None);
    }
}

#[test]
fn the_claims_an_admin_names_otherwise_are_read_under_those_names() {
    let names: BTreeMap<String, String> =
        [("branch", "git_branch"), ("node_name", "agent"), ("build_number", "number")]
            .map(|(role, claim)| (role.to_owned(), claim.to_owned()))
            .into();
    let renamed = with(
        claims(),
        &[
            ("branch", Value::Null),
            ("build_number", Value::Null),
            ("git_branch", json!("main")),
            ("number", json!(42)),
            ("agent", json!("linux-agent-1")),
        ],
    );
    let issuer = Issuer { name: "jenkins", claim_names: &names, controller_url: None };
    let job = CiKind::Jenkins.ci().job(&issuer, &renamed).unwrap();
    assert_eq!((job.repository.as_str(), job.git_ref.as_deref()), ("octo-org/octo-repo", Some("refs/heads/main")));
    let name = job.runner.name.unwrap();
    assert_eq!((name.value.as_str(), name.source), ("linux-agent-1", FactSource::Token));

    assert!(CiKind::Jenkins.ci().check_claim_names(&names).is_ok());
    let unknown: BTreeMap<String, String> = [("repository".to_owned(), "repo".to_owned())].into();
    assert_eq!(CiKind::Jenkins.ci().check_claim_names(&unknown).unwrap_err().0, "repository");
    assert!(CiKind::Github.ci().check_claim_names(&names).is_err());
}
