//! Each CI's job locator: the path it asks at, and how it is kept in the store.

use serde_json::{Value, json};

use super::{JobLocator, buildkite};
use crate::ci::CiKind;
use crate::ci::Job;

fn job(kind: CiKind, repository: &str, claims: Value) -> Job {
    let mut job = Job::new("ci", "9/1", repository);
    job.kind = Some(kind);
    job.repository_id = claims.get("job_project_id").and_then(Value::as_str).map(str::to_owned);
    job.claims = claims.as_object().cloned().unwrap_or_default();
    job
}

#[test]
fn every_segment_of_the_path_is_escaped_and_unreserved_characters_are_not() {
    let github = JobLocator::of(&job(CiKind::Github, "octo-org/octo_repo.v2", json!({}))).unwrap();
    assert_eq!(github.path().unwrap(), "/repos/octo-org/octo_repo.v2/actions/jobs/9%2F1");
    let gitlab = JobLocator::of(&job(CiKind::Gitlab, "g/p", json!({"job_project_id": "20"}))).unwrap();
    assert_eq!(gitlab.path().unwrap(), "/projects/20/jobs/9%2F1");
    let claims = json!({"organization_slug": "acme-inc", "pipeline_slug": "app/..", "build_number": 7});
    let buildkite = JobLocator::of(&job(CiKind::Buildkite, "acme-inc/app", claims)).unwrap();
    assert_eq!(buildkite.path().unwrap(), "/v2/organizations/acme-inc/pipelines/app%2F../builds/7/jobs/9%2F1");
    // A dot segment would climb the path however it is encoded: no call is made.
    let claims = json!({"organization_slug": "acme", "pipeline_slug": "..", "build_number": 7});
    let dots = JobLocator::of(&job(CiKind::Buildkite, "acme/..", claims)).unwrap();
    assert_eq!(dots.path(), None);
}

#[test]
fn a_token_without_the_coordinates_gives_no_locator() {
    assert!(JobLocator::of(&job(CiKind::Github, "no-slash", json!({}))).is_err());
    assert!(JobLocator::of(&job(CiKind::Gitlab, "g/p", json!({}))).is_err());
    let string_number = json!({"organization_slug": "acme", "pipeline_slug": "app", "build_number": "7"});
    assert!(JobLocator::of(&job(CiKind::Buildkite, "acme/app", string_number)).is_err());
    assert!(JobLocator::of(&job(CiKind::Circleci, "o/p", json!({}))).is_err());
    let root = json!({"iss": "https://jenkins.example.com/oidc", "sub": "https://jenkins.example.com/"});
    assert!(JobLocator::of(&job(CiKind::Jenkins, "o/p", root)).is_err());
}

#[test]
fn a_locator_reads_back_as_it_was_stored() {
    let locator = JobLocator::Buildkite(buildkite::Locator {
        organization: "acme".into(),
        pipeline: "app".into(),
        build_number: 1,
        job_id: "j".into(),
    });
    assert_eq!(JobLocator::from_json(&locator.to_json()), Some(locator));
    assert_eq!(JobLocator::from_json(r#"{"ci":"github","repository":"a/b"}"#), None);
}

#[test]
fn each_ci_s_locator_is_tagged_with_the_ci_s_name() {
    let claims = json!({
        "job_project_id": "20",
        "organization_slug": "acme",
        "pipeline_slug": "app",
        "build_number": 7,
        "iss": "https://jenkins.example.com/oidc",
        "sub": "https://jenkins.example.com/job/octo-org/job/octo-repo/",
        "prj_id": "271ef6f7",
    });
    for kind in CiKind::ALL.into_iter().filter(|kind| kind.ci().api.is_some()) {
        let mut job = job(kind, "octo-org/octo-repo", claims.clone());
        job.run_id = Some("7".into());
        // Jenkins' mapping names the job by the items of its URL.
        job.job_name = (kind == CiKind::Jenkins).then(|| "octo-org/octo-repo".into());
        let locator = JobLocator::of(&job).unwrap();
        assert_eq!(locator.kind(), kind);
        assert_eq!(serde_json::to_value(&locator).unwrap()["ci"], kind.name());
    }
}
