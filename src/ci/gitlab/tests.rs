//! GitLab: the jobs API's answers, Job Hook deliveries and the job locator.

use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::locator_job as job;
use crate::ci::test_support::{
    SECRET, assert_answer_about_another_job_is_unreadable, assert_statuses_map, by_token, fixture, fixture_json,
    headers, parse_answer, with,
};
use crate::ci::{JobLocator, Liveness, Verdict};

#[test]
fn every_documented_status_maps_to_running_finished_or_unknown() {
    use Liveness::*;
    let gitlab = fixture_json("gitlab-api-job-running.json");
    assert_statuses_map(&[
        (CiKind::Gitlab, &gitlab, "status", &["running"], Running),
        (CiKind::Gitlab, &gitlab, "status", &["success", "failed", "canceled", "skipped"], Finished),
        (CiKind::Gitlab, &gitlab, "status", &["created", "pending", "manual", "scheduled", "canceling"], Unknown),
    ]);
}

#[test]
fn the_documented_answer_names_its_runner() {
    let gitlab =
        parse_answer(CiKind::Gitlab, &serde_json::to_vec(&fixture_json("gitlab-api-job-running.json")).unwrap());
    let runner = gitlab.unwrap().runner.unwrap();
    assert_eq!((runner.id.as_deref(), runner.name.as_deref()), (Some("1"), Some("release-runner-1")));
    assert_eq!(runner.labels, ["linux", "release"]);
    assert_eq!(
        (runner.runner_type.as_deref(), runner.manager.as_deref(), runner.group.as_deref()),
        (Some("project_type"), Some("s_7c3b2a1f9e04"), None)
    );
}

#[test]
fn an_answer_of_the_wrong_shape_is_unreadable_never_a_status() {
    let gitlab = fixture_json("gitlab-api-job-running.json");
    assert!(parse_answer(CiKind::Gitlab, &with(gitlab, "runner", json!({"id": "1"}))).is_err());
}

#[test]
fn an_answer_about_another_job_is_unreadable_never_this_job_s_end() {
    assert_answer_about_another_job_is_unreadable(CiKind::Gitlab, fixture_json("gitlab-api-job-success.json"), "303");
}

#[test]
fn gitlab_s_running_job_hook_records_the_runner_and_is_not_an_end() {
    let verdict = by_token(CiKind::Gitlab, ("x-gitlab-event", "Job Hook"), &fixture("gitlab-job-hook-running.json"));
    let Verdict::Started { runner, .. } = verdict else { panic!("a start: {verdict:?}") };
    assert_eq!((runner.id.as_deref(), runner.name.as_deref()), (Some("1"), Some("release-runner-1")));
    assert_eq!(
        (runner.runner_type.as_deref(), runner.labels.as_slice()),
        (Some("project_type"), &["linux".to_owned(), "release".to_owned()][..])
    );
    let ended = by_token(CiKind::Gitlab, ("x-gitlab-event", "Job Hook"), &fixture("gitlab-job-hook.json"));
    assert!(matches!(ended, Verdict::End { .. }), "{ended:?}");
}

#[test]
fn a_start_whose_runner_field_has_the_wrong_type_is_refused() {
    let mut body: Value = serde_json::from_slice(&fixture("gitlab-job-hook-running.json")).unwrap();
    body["runner"]["id"] = Value::String("1".into());
    let headers = headers(&[("x-gitlab-token", SECRET.into()), ("x-gitlab-event", "Job Hook".into())]);
    let verdict =
        CiKind::Gitlab.ci().read_webhook(&headers, &serde_json::to_vec(&body).unwrap(), &SecretString::from(SECRET));
    assert!(verdict.is_err(), "{verdict:?}");
}

#[test]
fn every_segment_of_the_path_is_escaped_and_unreserved_characters_are_not() {
    let gitlab = JobLocator::of(&job(CiKind::Gitlab, "g/p", json!({"job_project_id": "20"}))).unwrap();
    assert_eq!(gitlab.path().unwrap(), "/projects/20/jobs/9%2F1");
}

#[test]
fn a_token_without_the_coordinates_gives_no_locator() {
    assert!(JobLocator::of(&job(CiKind::Gitlab, "g/p", json!({}))).is_err());
}
