//! GitHub Actions: the jobs API's answers, `workflow_job` deliveries and the job locator.

use hmac::{Hmac, Mac};
use secrecy::SecretString;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::ci::CiKind;
use crate::ci::test_support::locator_job as job;
use crate::ci::test_support::{
    SECRET, assert_answer_about_another_job_is_unreadable, assert_statuses_map, fixture, fixture_json, headers,
    parse_answer, with,
};
use crate::ci::{JobLocator, Liveness, MAX_FACT_CHARS, MAX_LABELS, Verdict};

#[test]
fn every_documented_status_maps_to_running_finished_or_unknown() {
    use Liveness::*;
    let github = fixture_json("github-api-job-in-progress.json");
    assert_statuses_map(&[
        (CiKind::Github, &github, "status", &["in_progress"], Running),
        (CiKind::Github, &github, "status", &["completed"], Finished),
        (CiKind::Github, &github, "status", &["queued", "waiting", "requested", "pending", "new"], Unknown),
    ]);
}

#[test]
fn the_documented_answer_names_its_runner() {
    let github =
        parse_answer(CiKind::Github, &serde_json::to_vec(&fixture_json("github-api-job-completed.json")).unwrap());
    let runner = github.unwrap().runner.unwrap();
    assert_eq!(
        (runner.id.as_deref(), runner.name.as_deref(), runner.group.as_deref()),
        (Some("5"), Some("release-runner-5"), Some("release"))
    );
    assert_eq!(runner.labels, ["self-hosted", "linux", "release"]);
}

#[test]
fn a_queued_github_job_has_no_runner_yet() {
    let mut answer = fixture_json("github-api-job-in-progress.json");
    for field in ["runner_id", "runner_name", "runner_group_id", "runner_group_name"] {
        answer[field] = Value::Null;
    }
    answer["status"] = json!("queued");
    let report = parse_answer(CiKind::Github, &serde_json::to_vec(&answer).unwrap()).unwrap();
    assert_eq!((report.liveness, report.runner), (Liveness::Unknown, None));
}

#[test]
fn an_answer_of_the_wrong_shape_is_unreadable_never_a_status() {
    let github = fixture_json("github-api-job-in-progress.json");
    let unreadable: Vec<Vec<u8>> = vec![
        with(github.clone(), "status", json!(7)),
        with(github.clone(), "status", Value::Null),
        with(github.clone(), "runner_id", json!("5")),
        with(github.clone(), "labels", json!("self-hosted")),
        b"".to_vec(),
        b"<html>rate limited</html>".to_vec(),
        b"[]".to_vec(),
        b"{\"status\": \"completed\"".to_vec(),
    ];
    for body in unreadable {
        let result = parse_answer(CiKind::Github, &body);
        assert!(result.is_err(), "{}", String::from_utf8_lossy(&body));
    }
}

#[test]
fn hostile_runner_facts_are_cut_to_size_and_stripped_of_control_characters() {
    let mut answer = fixture_json("github-api-job-in-progress.json");
    answer["runner_name"] = json!(format!("evil\n\u{1b}[31m{}", "x".repeat(10_000)));
    answer["labels"] = json!(vec!["l"; 1000]);
    let runner = parse_answer(CiKind::Github, &serde_json::to_vec(&answer).unwrap()).unwrap().runner.unwrap();
    let name = runner.name.unwrap();
    assert!(name.starts_with("evil[31m") && name.chars().count() == MAX_FACT_CHARS, "{name:.20}");
    assert_eq!(runner.labels.len(), MAX_LABELS);
}

#[test]
fn an_answer_about_another_job_is_unreadable_never_this_job_s_end() {
    assert_answer_about_another_job_is_unreadable(
        CiKind::Github,
        fixture_json("github-api-job-completed.json"),
        "289782452",
    );
}

fn github(event_fixture: &str) -> Verdict {
    let body = fixture(event_fixture);
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(&body);
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let headers = headers(&[
        ("x-hub-signature-256", signature),
        ("x-github-event", "workflow_job".into()),
        ("x-github-delivery", "d-1".into()),
    ]);
    CiKind::Github.ci().read_webhook(&headers, &body, &SecretString::from(SECRET)).unwrap()
}

#[test]
fn github_s_in_progress_event_records_the_runner_and_its_completion_ends_the_job() {
    let Verdict::Started { job_id, runner } = github("github-workflow-job-in-progress.json") else { panic!("a start") };
    let expected: Value = serde_json::from_slice(&fixture("github-workflow-job-in-progress.json")).unwrap();
    assert_eq!(job_id, expected["workflow_job"]["id"].to_string());
    assert_eq!(
        (runner.id.as_deref(), runner.name.as_deref(), runner.group.as_deref(), runner.source.as_str()),
        (Some("5"), Some("release-runner-5"), Some("release"), "webhook:github")
    );
    assert_eq!(runner.labels, ["self-hosted", "linux", "release"]);
    let Verdict::End { runner: Some(runner), .. } = github("github-workflow-job-completed.json") else {
        panic!("an end that names its runner")
    };
    assert_eq!(runner.name.as_deref(), Some("release-runner-5"));
}

#[test]
fn every_segment_of_the_path_is_escaped_and_unreserved_characters_are_not() {
    let github = JobLocator::of(&job(CiKind::Github, "octo-org/octo_repo.v2", json!({}))).unwrap();
    assert_eq!(github.path().unwrap(), "/repos/octo-org/octo_repo.v2/actions/jobs/9%2F1");
}

#[test]
fn a_token_without_the_coordinates_gives_no_locator() {
    assert!(JobLocator::of(&job(CiKind::Github, "no-slash", json!({}))).is_err());
}
