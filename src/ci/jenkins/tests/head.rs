//! The head of a build's `SCMRevisionAction` read from the fixtures' answers, and what each
//! makes of the build the token names.

use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::api::Head;
use crate::ci::jenkins::head::{Actions, apply};
use crate::ci::test_support::fixture;
use crate::ci::{DangerousTrigger, Job};
use crate::ci::{Issuer, JobLocator};

fn head_of(body: &Value) -> Result<Head, String> {
    serde_json::from_value::<Actions>(body.clone()).map_err(|e| e.to_string())?.head()
}

fn answer(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

/// The job a token of the fixture's build maps to, with `branch` as its claim (or none).
fn job(job_path: &str, number: u64, branch: Option<&str>) -> Job {
    let mut claims: Value = serde_json::from_slice(&fixture("jenkins-token-claims.json")).unwrap();
    claims["sub"] = json!(format!("https://jenkins.example.com/{job_path}"));
    claims["build_number"] = json!(number);
    match branch {
        Some(branch) => claims["branch"] = json!(branch),
        None => _ = claims.as_object_mut().unwrap().remove("branch"),
    }
    let mut job = CiKind::Jenkins.ci().job(&Issuer::named("jenkins"), &claims).unwrap();
    // As the verifier keeps them, for the API's locator.
    job.claims = claims.as_object().unwrap().clone();
    job
}

#[test]
fn each_fixture_s_head_is_read_by_its_class_and_origin() {
    assert_eq!(head_of(&answer("jenkins-api-build-branch.json")), Ok(Head::Branch("main".into())));
    assert_eq!(head_of(&answer("jenkins-api-build-tag.json")), Ok(Head::Tag("release-1.2".into())));
    assert_eq!(
        head_of(&answer("jenkins-api-build-change-request-fork.json")),
        Ok(Head::ChangeRequest { name: "PR-7".into(), id: None, fork: Some("mallory".into()) })
    );
    assert_eq!(head_of(&answer("jenkins-api-build-none.json")), Ok(Head::None));
    // The default-depth answer hides the revision: asked without the tree, no head is told.
    assert_eq!(head_of(&answer("jenkins-api-build-running.json")), Ok(Head::None));
}

#[test]
fn other_branch_sources_heads_and_unknown_ones() {
    let with_head = |head: Value| json!({"actions": [null, {}, {"_class": "jenkins.scm.api.SCMRevisionAction", "revision": {"head": head}}]});
    for (head, expected) in [
        (json!({"name": "v1"}), Ok(Head::Branch("v1".into()))),
        (json!({"_class": "jenkins.plugins.git.GitTagSCMHead", "name": "v1"}), Ok(Head::Tag("v1".into()))),
        (
            json!({"_class": "io.jenkins.plugins.gitlabbranchsource.GitLabTagSCMHead", "name": "v1"}),
            Ok(Head::Tag("v1".into())),
        ),
        (
            json!({"_class": "org.jenkinsci.plugins.github_branch_source.PullRequestSCMHead$FixOrigin", "name": "PR-1",
                   "origin": {"_class": "jenkins.scm.api.SCMHeadOrigin$Default"}}),
            Ok(Head::ChangeRequest { name: "PR-1".into(), id: None, fork: None }),
        ),
        (
            json!({"_class": "com.example.SomeSCMHead", "name": "MR-2", "id": "2"}),
            Ok(Head::ChangeRequest { name: "MR-2".into(), id: Some("2".into()), fork: None }),
        ),
    ] {
        assert_eq!(head_of(&with_head(head.clone())), expected, "{head}");
    }
    for head in [
        json!({"_class": "com.example.SomeSCMHead", "name": "x"}),
        json!({"_class": "jenkins.plugins.git.GitTagSCMHeadX", "name": "x"}),
        json!({"name": "x", "origin": {"_class": "jenkins.scm.api.SCMHeadOrigin$Fork", "name": "mallory"}}),
    ] {
        assert!(head_of(&with_head(head.clone())).is_err(), "{head}");
    }
    let two = json!({"actions": [
        {"_class": "jenkins.scm.api.SCMRevisionAction", "revision": {"head": {"name": "main"}}},
        {"_class": "jenkins.scm.api.SCMRevisionAction", "revision": {"head": {"name": "other"}}},
    ]});
    assert!(head_of(&two).is_err());
    // Strictly typed: a name that is not a string is no answer.
    assert!(head_of(&with_head(json!({"name": 7}))).is_err());
}

#[test]
fn a_tag_build_is_a_tag_though_its_branch_claim_names_it() {
    let mut tag = job("job/octo-org/job/octo-repo/job/release-1.2/", 3, Some("release-1.2"));
    assert_eq!(tag.git_ref.as_deref(), Some("refs/heads/release-1.2"), "what the claim alone says");
    apply(&mut tag, Ok(&Head::Tag("release-1.2".into()))).unwrap();
    assert_eq!((tag.git_ref.as_deref(), tag.ref_type.as_deref()), (Some("refs/tags/release-1.2"), Some("tag")));
    assert_eq!(tag.repository, "octo-org/octo-repo");
}

#[test]
fn a_branch_build_without_a_branch_claim_gets_its_project_and_ref() {
    let mut main = job("job/octo-org/job/octo-repo/job/main/", 42, None);
    assert_eq!((main.repository.as_str(), main.git_ref.as_deref()), ("octo-org/octo-repo/main", None));
    apply(&mut main, Ok(&Head::Branch("main".into()))).unwrap();
    assert_eq!(main.repository, "octo-org/octo-repo");
    assert_eq!((main.git_ref.as_deref(), main.ref_type.as_deref()), (Some("refs/heads/main"), Some("branch")));
    assert_eq!((main.ref_unknown, main.event), (None, None));
}

#[test]
fn a_change_request_from_a_fork_is_a_dangerous_trigger_naming_the_fork() {
    let mut pr = job("job/octo-org/job/octo-repo/job/PR-7/", 5, Some("PR-7"));
    apply(&mut pr, Ok(&Head::ChangeRequest { name: "PR-7".into(), id: None, fork: Some("mallory".into()) })).unwrap();
    assert_eq!((pr.git_ref, pr.ref_type), (None, None));
    assert_eq!(pr.event.as_deref(), Some("change_request"));
    assert_eq!(pr.dangerous_trigger, Some(DangerousTrigger::Event("change_request".into())));
    assert_eq!(pr.fork.as_deref(), Some("mallory"));
}

#[test]
fn a_head_that_is_not_the_job_the_token_names_is_refused() {
    let mut main = job("job/octo-org/job/octo-repo/job/main/", 42, Some("main"));
    assert!(apply(&mut main.clone(), Ok(&Head::Branch("release".into()))).is_err());
    assert!(apply(&mut main.clone(), Ok(&Head::Tag("release".into()))).is_err());
    // A freestyle job has no project to be a head of.
    let mut deploy = job("job/deploy/", 12, None);
    assert!(apply(&mut deploy, Ok(&Head::Branch("deploy".into()))).is_err());
    // Change-request claims on a build whose head is a branch.
    main.event = Some("change_request".into());
    assert!(apply(&mut main, Ok(&Head::Branch("main".into()))).is_err());
}

#[test]
fn no_head_or_no_answer_leaves_the_ref_unknown_saying_why() {
    let mut deploy = job("job/deploy/", 12, None);
    apply(&mut deploy, Ok(&Head::None)).unwrap();
    assert!(deploy.ref_unknown.as_deref().is_some_and(|why| why.contains("not a multibranch build")));
    let mut main = job("job/octo-org/job/octo-repo/job/main/", 42, Some("main"));
    apply(&mut main, Err("HTTP 503")).unwrap();
    assert_eq!(main.git_ref, None, "a branch claim cannot tell a tag from a branch");
    assert!(main.ref_unknown.as_deref().is_some_and(|why| why.contains("HTTP 503")));
}

#[test]
fn the_build_is_asked_for_its_head_with_the_tree_that_shows_it() {
    let main = job("job/octo-org/job/octo-repo/job/main/", 42, Some("main"));
    let locator = JobLocator::of(&main).unwrap();
    let path = locator.path().unwrap();
    assert!(
        path.ends_with("/api/json?tree=number,url,building,result,actions[revision[head[name,id,origin[name]]]]"),
        "{path}"
    );
    let api = CiKind::Jenkins.ci().api.unwrap();
    assert!(api.tells_head());
    let report = api.read_answer(&locator, &fixture("jenkins-api-build-branch.json")).unwrap();
    assert_eq!(report.head, Some(Ok(Head::Branch("main".into()))));
}
