//! Buildkite: the REST API's job and agent answers, `job.started` deliveries and the job locator.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::locator_job as job;
use crate::ci::test_support::{
    assert_answer_about_another_job_is_unreadable, assert_statuses_map, by_token, fixture, fixture_json, parse_answer,
    with,
};
use crate::ci::{JobLocator, Liveness, MAX_LABELS, Verdict, buildkite};

#[test]
fn every_documented_status_maps_to_running_finished_or_unknown() {
    use Liveness::*;
    let buildkite = fixture_json("buildkite-api-job.json");
    assert_statuses_map(&[
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
    ]);
}

#[test]
fn the_documented_answer_names_its_runner() {
    let buildkite =
        parse_answer(CiKind::Buildkite, &serde_json::to_vec(&fixture_json("buildkite-api-job.json")).unwrap());
    let runner = buildkite.unwrap().runner.unwrap();
    assert_eq!(runner.name.as_deref(), Some("acme-inc-linux-1"));
    assert_eq!(
        (runner.queue.as_deref(), runner.group.as_deref()),
        (Some("default"), Some("0184990a-0c1d-4e2f-8a9b-1c2d3e4f5a6b"))
    );
    assert_eq!(runner.source, "ci_api");
}

#[test]
fn an_answer_of_the_wrong_shape_is_unreadable_never_a_status() {
    let buildkite = fixture_json("buildkite-api-job.json");
    assert!(parse_answer(CiKind::Buildkite, &with(buildkite, "state", json!(["running"]))).is_err());
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
    assert_answer_about_another_job_is_unreadable(
        CiKind::Buildkite,
        with_state(fixture_json("buildkite-api-job.json"), "passed"),
        "0184990a-0000-0000-0000-000000000000",
    );
}

fn with_state(mut answer: Value, state: &str) -> Value {
    answer["state"] = json!(state);
    answer
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
fn every_segment_of_the_path_is_escaped_and_unreserved_characters_are_not() {
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
    let string_number = json!({"organization_slug": "acme", "pipeline_slug": "app", "build_number": "7"});
    assert!(JobLocator::of(&job(CiKind::Buildkite, "acme/app", string_number)).is_err());
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
