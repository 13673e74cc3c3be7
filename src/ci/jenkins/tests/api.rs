//! The REST API: the build's path and answers, the agent running it, and a locator's coordinates.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::fixture;
use crate::ci::test_support::locator_job as job;
use crate::ci::{JobLocator, Liveness};

use super::{BUILD_URL, claims, map};

fn located() -> JobLocator {
    let mut job = map(&claims()).unwrap();
    job.claims = claims().as_object().cloned().unwrap();
    JobLocator::of(&job).unwrap()
}

#[test]
fn the_api_is_asked_at_the_build_s_own_path_and_its_answers_say_whether_it_runs() {
    let locator = located();
    let JobLocator::Jenkins(at) = &locator else { panic!("a Jenkins locator") };
    assert_eq!(at.build_url, BUILD_URL);
    assert_eq!(
        locator.path().as_deref(),
        Some(
            "/job/octo-org/job/octo-repo/job/main/42/api/json?tree=number,url,building,result,actions[revision[head[name,id,origin[name]]]]"
        )
    );
    let api = CiKind::Jenkins.ci().api.unwrap();
    let running = api.read_answer(&locator, &fixture("jenkins-api-build-running.json")).unwrap();
    assert_eq!((running.liveness, running.status.as_str()), (Liveness::Running, "building"));
    let finished = api.read_answer(&locator, &fixture("jenkins-api-build-finished.json")).unwrap();
    assert_eq!((finished.liveness, finished.status.as_str()), (Liveness::Finished, "SUCCESS"));
    assert_eq!(api.not_found(), Some(Liveness::Finished));

    let mut other: Value = serde_json::from_slice(&fixture("jenkins-api-build-running.json")).unwrap();
    other["number"] = json!(41);
    assert!(api.read_answer(&locator, &serde_json::to_vec(&other).unwrap()).is_err());
    other["number"] = json!(42);
    other["url"] = json!("https://jenkins.example.com/job/other/job/octo-repo/job/main/42/");
    assert!(api.read_answer(&locator, &serde_json::to_vec(&other).unwrap()).is_err());
}

#[test]
fn the_agent_is_the_one_whose_executor_runs_the_build() {
    let locator = located();
    let api = CiKind::Jenkins.ci().api.unwrap();
    let agent = api.find_runner(&locator, &fixture("jenkins-api-computer.json")).unwrap().unwrap();
    assert_eq!(agent.name.as_deref(), Some("linux-agent-1"));
    assert_eq!(agent.labels, ["linux", "linux-agent-1"]);
    assert_eq!(agent.source, "ci_api");

    let mut computers: Value = serde_json::from_slice(&fixture("jenkins-api-computer.json")).unwrap();
    computers["computer"][1]["executors"][0]["currentExecutable"]["url"] =
        json!("https://jenkins.example.com/job/x/job/octo-org/job/octo-repo/job/main/42/");
    assert_eq!(api.find_runner(&locator, &serde_json::to_vec(&computers).unwrap()).unwrap(), None);
}

#[test]
fn a_token_without_the_coordinates_gives_no_locator() {
    let root = json!({"iss": "https://jenkins.example.com/oidc", "sub": "https://jenkins.example.com/"});
    assert!(JobLocator::of(&job(CiKind::Jenkins, "o/p", root)).is_err());
}
