//! What the store keeps about a job, pinned byte for byte: a broker upgraded over a store written
//! by an older one must read every row back, and no change to the code may need a migration.

use ci_creds::ci::CiKind;
use ci_creds::ci::JobLocator;
use ci_creds::ci::{NamedJob, RunnerFacts};
use ci_creds::identity::job_from_claims;
use ci_creds::lifecycle::EndedBy;
use serde_json::json;

#[test]
fn job_locators_are_stored_as_tagged_json_and_read_back() {
    let github = job_from_claims(
        CiKind::Github,
        "github",
        json!({"check_run_id": "42", "repository": "octo-org/octo-repo", "exp": 1}),
    )
    .unwrap();
    let gitlab = job_from_claims(
        CiKind::Gitlab,
        "gitlab",
        json!({"job_id": "302", "job_project_path": "g/p", "job_project_id": "20", "exp": 1}),
    )
    .unwrap();
    let buildkite = job_from_claims(
        CiKind::Buildkite,
        "buildkite",
        json!({"job_id": "j-1", "organization_slug": "acme", "pipeline_slug": "app", "build_number": 7, "exp": 1}),
    )
    .unwrap();
    let jenkins = job_from_claims(
        CiKind::Jenkins,
        "jenkins",
        json!({
            "iss": "https://jenkins.example.com/oidc",
            "sub": "https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/",
            "build_number": 42,
            "exp": 1,
        }),
    )
    .unwrap();
    let azure_claims = json!({
        "iss": "https://vstoken.dev.azure.com/0ca3ddd9-f0b0-4635-a98c-5866526961b6",
        "org_id": "0ca3ddd9-f0b0-4635-a98c-5866526961b6",
        "prj_id": "271ef6f7-5998-4b0f-86fb-4b54d9129990",
        "def_id": "12",
        "rpo_id": "octo-org/octo-repo",
        "run_id": "4711",
        "exp": 1,
    });
    let azure_run = job_from_claims(CiKind::AzurePipelines, "azure", azure_claims).unwrap();
    let mut azure_job = azure_run.clone();
    let named = NamedJob::new("e87e3d16-29b0-5003-7d86-82b704b96244", 2).unwrap();
    (CiKind::AzurePipelines.ci().job_in_run.as_ref().unwrap().bind)(&mut azure_job, named);
    let cases = [
        (&github, r#"{"ci":"github","repository":"octo-org/octo-repo","job_id":"42"}"#),
        (&gitlab, r#"{"ci":"gitlab","project_id":"20","job_id":"302"}"#),
        (&buildkite, r#"{"ci":"buildkite","organization":"acme","pipeline":"app","build_number":7,"job_id":"j-1"}"#),
        (
            &jenkins,
            r#"{"ci":"jenkins","items":["octo-org","octo-repo","main"],"build_number":42,"build_url":"https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/42/"}"#,
        ),
        // A run, as brokers that bound only runs stored it; and a job within it.
        (&azure_run, r#"{"ci":"azure_pipelines","project":"271ef6f7-5998-4b0f-86fb-4b54d9129990","run_id":4711}"#),
        (
            &azure_job,
            r#"{"ci":"azure_pipelines","project":"271ef6f7-5998-4b0f-86fb-4b54d9129990","run_id":4711,"job":{"id":"e87e3d16-29b0-5003-7d86-82b704b96244","attempt":2}}"#,
        ),
    ];
    for (job, stored) in cases {
        let locator = JobLocator::of(job).unwrap();
        assert_eq!(locator.to_json(), stored);
        assert_eq!(JobLocator::from_json(stored), Some(locator), "{stored}");
    }
    for unreadable in [
        r#"{"ci":"github","repository":"a/b"}"#,
        r#"{"ci":"github","repository":"a/b","job_id":"1","extra":1}"#,
        r#"{"ci":"circleci","job_id":"1"}"#,
        r#"{"repository":"a/b","job_id":"1"}"#,
        r#"{"ci":"gitlab","project_id":20,"job_id":"1"}"#,
        r#"{"ci":"azure_pipelines","project":"p","run_id":1,"job":{"id":"__default","attempt":1}}"#,
        r#"{"ci":"azure_pipelines","project":"p","run_id":1,"job":{"id":"e87e3d16-29b0-5003-7d86-82b704b96244","attempt":0}}"#,
    ] {
        assert_eq!(JobLocator::from_json(unreadable), None, "{unreadable}");
    }
}

#[test]
fn runner_facts_are_stored_with_their_source_last() {
    let every = RunnerFacts {
        id: Some("5".into()),
        name: Some("release-runner-5".into()),
        group: Some("release".into()),
        labels: vec!["self-hosted".into(), "linux".into()],
        queue: Some("default".into()),
        runner_type: Some("project_type".into()),
        manager: Some("s_7c3b2a1f9e04".into()),
        environment: Some("self-hosted".into()),
        source: "ci_api".into(),
    };
    let stored = r#"{"id":"5","name":"release-runner-5","group":"release","labels":["self-hosted","linux"],"queue":"default","runner_type":"project_type","manager":"s_7c3b2a1f9e04","environment":"self-hosted","source":"ci_api"}"#;
    assert_eq!(serde_json::to_string(&every).unwrap(), stored);
    assert_eq!(serde_json::from_str::<RunnerFacts>(stored).unwrap(), every);
    // As brokers stored them before the environment was a fact: read, without it.
    let before = r#"{"id":"5","name":"release-runner-5","group":"release","labels":["self-hosted","linux"],"queue":"default","runner_type":"project_type","manager":"s_7c3b2a1f9e04","source":"ci_api"}"#;
    assert_eq!(serde_json::from_str::<RunnerFacts>(before).unwrap(), RunnerFacts { environment: None, ..every });
    let sparse =
        RunnerFacts { name: Some("acme-inc-linux-1".into()), source: "webhook:buildkite".into(), ..Default::default() };
    let stored = r#"{"name":"acme-inc-linux-1","source":"webhook:buildkite"}"#;
    assert_eq!(serde_json::to_string(&sparse).unwrap(), stored);
    assert_eq!(serde_json::from_str::<RunnerFacts>(stored).unwrap(), sparse);
}

#[test]
fn webhook_ends_are_recorded_under_each_ci_s_name() {
    // The name is the dedupe key's `source` column and the `ended_by` text of a job.
    for (source, name) in [
        (CiKind::Github, "github"),
        (CiKind::Gitlab, "gitlab"),
        (CiKind::Buildkite, "buildkite"),
        (CiKind::Circleci, "circleci"),
    ] {
        assert_eq!(source.name(), name);
        assert_eq!(EndedBy::Webhook(source.name()).to_string(), format!("webhook:{name}"));
        let kind: CiKind = serde_json::from_value(json!(name)).unwrap();
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
    }
}
