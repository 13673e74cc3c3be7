//! Start and completion deliveries name the runner; a start is never an end.

use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue};
use secrecy::SecretString;
use serde_json::Value;
use sha2::Sha256;

use super::Verdict;
use crate::ci::CiKind;

const SECRET: &str = "runner-facts-secret";

fn fixture(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let path = dir.join(name);
    std::fs::read(path).expect("fixture readable")
}

fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(name, value)| (http::HeaderName::from_static(name), HeaderValue::from_str(value).unwrap()))
        .collect()
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

fn by_token(source: CiKind, event: (&'static str, &str), body: &[u8]) -> Verdict {
    let token_header = if source == CiKind::Gitlab { "x-gitlab-token" } else { "x-buildkite-token" };
    let headers = headers(&[(token_header, SECRET.into()), (event.0, event.1.into())]);
    source.ci().read_webhook(&headers, body, &SecretString::from(SECRET)).unwrap()
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
fn buildkite_s_job_started_records_the_agent() {
    let body = fixture("buildkite-job-started.json");
    let verdict = by_token(CiKind::Buildkite, ("x-buildkite-event", "job.started"), &body);
    let Verdict::Started { job_id, runner } = verdict else { panic!("a start: {verdict:?}") };
    assert_eq!(job_id, "0184990a-477b-4fa8-9968-496074483cee");
    assert_eq!(runner.name.as_deref(), Some("acme-inc-linux-1"));
    assert_eq!(runner.source, "webhook:buildkite");
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
