//! Each CI's job answer, read as the broker reads it: whether the job runs, the runner it ran
//! on, and that anything else (another shape, another job) is unreadable.

use serde_json::{Value, json};

use super::{JobLocator, JobReport, Liveness};
use crate::ci::CiKind;
use crate::ci::{Job, MAX_FACT_CHARS, MAX_LABELS};

fn fixture(name: &str) -> Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let path = dir.join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture readable")).expect("fixture is JSON")
}

fn with(mut answer: Value, field: &str, value: Value) -> Vec<u8> {
    answer[field] = value;
    serde_json::to_vec(&answer).unwrap()
}

/// Where the broker would ask about job `job_id` of `kind`.
fn located(kind: CiKind, job_id: &str) -> JobLocator {
    let mut job = Job::new("ci", job_id, "octo-org/octo-repo");
    job.repository_id = Some("20".into());
    job.claims = json!({"organization_slug": "acme-inc", "pipeline_slug": "app", "build_number": 1})
        .as_object()
        .cloned()
        .unwrap();
    kind.ci().api.unwrap().locate(&job).unwrap()
}

/// Reads `body` as the answer about the job it names, as the broker asking about that job would.
fn parse_answer(kind: CiKind, body: &[u8]) -> Result<JobReport, String> {
    let named = serde_json::from_slice::<Value>(body).ok().map(|answer| parse_answer_id(&answer));
    let locator = located(kind, named.as_deref().unwrap_or("unnamed"));
    kind.ci().api.unwrap().read_answer(&locator, body)
}
#[test]
fn every_documented_status_maps_to_running_finished_or_unknown() {
    use Liveness::*;
    let github = fixture("github-api-job-in-progress.json");
    let gitlab = fixture("gitlab-api-job-running.json");
    let buildkite = fixture("buildkite-api-job.json");
    let cases: &[(CiKind, &Value, &str, &[&str], Liveness)] = &[
        (CiKind::Github, &github, "status", &["in_progress"], Running),
        (CiKind::Github, &github, "status", &["completed"], Finished),
        (CiKind::Github, &github, "status", &["queued", "waiting", "requested", "pending", "new"], Unknown),
        (CiKind::Gitlab, &gitlab, "status", &["running"], Running),
        (CiKind::Gitlab, &gitlab, "status", &["success", "failed", "canceled", "skipped"], Finished),
        (CiKind::Gitlab, &gitlab, "status", &["created", "pending", "manual", "scheduled", "canceling"], Unknown),
        (
            CiKind::Buildkite,
            &buildkite,
            "state",
            &["assigned", "accepted", "running", "canceling", "timing_out"],
            Running,
        ),
        (
            CiKind::Buildkite,
            &buildkite,
            "state",
            &["passed", "failed", "canceled", "timed_out", "skipped", "broken", "expired", "finished"],
            Finished,
        ),
        (CiKind::Buildkite, &buildkite, "state", &["scheduled", "waiting", "blocked", "limited"], Unknown),
    ];
    for (kind, answer, field, statuses, expected) in cases {
        for status in *statuses {
            let report = parse_answer(*kind, &with((*answer).clone(), field, json!(status))).unwrap();
            assert_eq!(report.liveness, *expected, "{kind:?} {status}");
            assert_eq!(report.status, *status);
        }
    }
}

#[test]
fn the_documented_answers_name_their_runner() {
    let github = parse_answer(CiKind::Github, &serde_json::to_vec(&fixture("github-api-job-completed.json")).unwrap());
    let runner = github.unwrap().runner.unwrap();
    assert_eq!(
        (runner.id.as_deref(), runner.name.as_deref(), runner.group.as_deref()),
        (Some("5"), Some("release-runner-5"), Some("release"))
    );
    assert_eq!(runner.labels, ["self-hosted", "linux", "release"]);
    let gitlab = parse_answer(CiKind::Gitlab, &serde_json::to_vec(&fixture("gitlab-api-job-running.json")).unwrap());
    let runner = gitlab.unwrap().runner.unwrap();
    assert_eq!((runner.id.as_deref(), runner.name.as_deref()), (Some("1"), Some("release-runner-1")));
    assert_eq!(runner.labels, ["linux", "release"]);
    assert_eq!(
        (runner.runner_type.as_deref(), runner.manager.as_deref(), runner.group.as_deref()),
        (Some("project_type"), Some("s_7c3b2a1f9e04"), None)
    );
    let buildkite = parse_answer(CiKind::Buildkite, &serde_json::to_vec(&fixture("buildkite-api-job.json")).unwrap());
    let runner = buildkite.unwrap().runner.unwrap();
    assert_eq!(runner.name.as_deref(), Some("acme-inc-linux-1"));
    assert_eq!(
        (runner.queue.as_deref(), runner.group.as_deref()),
        (Some("default"), Some("0184990a-0c1d-4e2f-8a9b-1c2d3e4f5a6b"))
    );
    assert_eq!(runner.source, "ci_api");
}

#[test]
fn a_queued_github_job_has_no_runner_yet() {
    let mut answer = fixture("github-api-job-in-progress.json");
    for field in ["runner_id", "runner_name", "runner_group_id", "runner_group_name"] {
        answer[field] = Value::Null;
    }
    answer["status"] = json!("queued");
    let report = parse_answer(CiKind::Github, &serde_json::to_vec(&answer).unwrap()).unwrap();
    assert_eq!((report.liveness, report.runner), (Liveness::Unknown, None));
}

#[test]
fn an_answer_of_the_wrong_shape_is_unreadable_never_a_status() {
    let github = fixture("github-api-job-in-progress.json");
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
    let gitlab = fixture("gitlab-api-job-running.json");
    assert!(parse_answer(CiKind::Gitlab, &with(gitlab, "runner", json!({"id": "1"}))).is_err());
    let buildkite = fixture("buildkite-api-job.json");
    assert!(parse_answer(CiKind::Buildkite, &with(buildkite, "state", json!(["running"]))).is_err());
}

#[test]
fn hostile_runner_facts_are_cut_to_size_and_stripped_of_control_characters() {
    let mut answer = fixture("github-api-job-in-progress.json");
    answer["runner_name"] = json!(format!("evil\n\u{1b}[31m{}", "x".repeat(10_000)));
    answer["labels"] = json!(vec!["l"; 1000]);
    let runner = parse_answer(CiKind::Github, &serde_json::to_vec(&answer).unwrap()).unwrap().runner.unwrap();
    let name = runner.name.unwrap();
    assert!(name.starts_with("evil[31m") && name.chars().count() == MAX_FACT_CHARS, "{name:.20}");
    assert_eq!(runner.labels.len(), MAX_LABELS);
}

#[test]
fn a_buildkite_agent_s_tags_are_read_bounded_and_a_wrong_shape_is_unreadable() {
    let body = json!({"id": "a", "name": "agent", "meta_data": ["queue=default", "os=linux\u{7}"]});
    let tags = read_agent_tags(&serde_json::to_vec(&body).unwrap()).unwrap();
    assert_eq!(tags, ["queue=default", "os=linux"]);
    let many = json!({"meta_data": vec!["t=1"; 1000]});
    assert_eq!(read_agent_tags(&serde_json::to_vec(&many).unwrap()).unwrap().len(), MAX_LABELS);
    assert!(read_agent_tags(br#"{"meta_data": "queue=default"}"#).is_err());
}

fn read_agent_tags(body: &[u8]) -> Result<Vec<String>, String> {
    CiKind::Buildkite.ci().api.unwrap().read_runner_labels(body)
}

#[test]
fn an_answer_about_another_job_is_unreadable_never_this_job_s_end() {
    let cases = [
        (CiKind::Github, fixture("github-api-job-completed.json"), "289782452"),
        (CiKind::Gitlab, fixture("gitlab-api-job-success.json"), "303"),
        (
            CiKind::Buildkite,
            with_state(fixture("buildkite-api-job.json"), "passed"),
            "0184990a-0000-0000-0000-000000000000",
        ),
    ];
    for (kind, answer, other_job) in cases {
        let body = serde_json::to_vec(&answer).unwrap();
        let api = kind.ci().api.unwrap();
        let about_it = api.read_answer(&located(kind, &parse_answer_id(&answer)), &body).unwrap();
        assert_eq!(about_it.liveness, Liveness::Finished, "{kind:?}");
        let about_another = api.read_answer(&located(kind, other_job), &body);
        assert!(about_another.unwrap_err().contains("not the job asked about"), "{kind:?}");
    }
}

fn with_state(mut answer: Value, state: &str) -> Value {
    answer["state"] = json!(state);
    answer
}

fn parse_answer_id(answer: &Value) -> String {
    match &answer["id"] {
        Value::String(id) => id.clone(),
        id => id.to_string(),
    }
}
