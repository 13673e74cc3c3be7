//! A CI API's job answer, as the broker reads it at an exchange and in reconciliation: the first
//! byte picks the CI (each with a job API), the rest is the body. Whatever it says, a readable
//! answer settles to running, finished or unknown, its runner facts stay bounded, and an answer
//! about another job than the one asked about is never read. For Azure Pipelines the body is also
//! read as the run's timeline, asked about a job named within the run and about the run itself,
//! whose pool is known only with every job record on the run's queue.
#![no_main]

use ci_creds::ci::JobReport;
use ci_creds::ci::{JobLocator, Liveness};
use ci_creds::ci::{Job, NamedJob};
use ci_creds::ci::CiKind;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Where the broker would ask about job `job_id` of `kind` (a Jenkins build or an Azure run by
/// its number); `None` for one that is not a number.
fn located(kind: CiKind, job_id: &str) -> Option<JobLocator> {
    let mut job = Job::new("ci", job_id, "octo-org/octo-repo");
    job.kind = Some(kind);
    job.repository_id = Some("20".into());
    job.run_id = Some(job_id.to_owned());
    let claims = json!({
        "organization_slug": "acme-inc",
        "pipeline_slug": "app",
        "build_number": 1,
        "iss": "https://jenkins.example.com/oidc",
        "sub": "https://jenkins.example.com/job/octo-org/job/octo-repo/job/main/",
        "prj_id": "271ef6f7-5998-4b0f-86fb-4b54d9129990",
    });
    job.claims = claims.as_object().cloned().unwrap_or_default();
    let located = JobLocator::of(&job);
    assert!(located.is_ok() || numbered(kind), "every CI with a job API locates this job");
    located.ok()
}

/// Whether the CI's jobs are numbers: Jenkins' builds, Azure's runs.
fn numbered(kind: CiKind) -> bool {
    matches!(kind, CiKind::Jenkins | CiKind::AzurePipelines)
}

/// How an answer names its job: a Jenkins build by its `number`, every other job by `id`.
fn named(kind: CiKind, body: &[u8]) -> String {
    let field = if kind == CiKind::Jenkins { "number" } else { "id" };
    match serde_json::from_slice::<Value>(body).ok().map(|answer| answer[field].clone()) {
        Some(Value::String(id)) => id,
        Some(Value::Number(id)) => id.to_string(),
        _ => "unnamed".to_owned(),
    }
}

/// Another job than `named`, of the same shape.
fn another(kind: CiKind, named: &str) -> String {
    if numbered(kind) {
        named.parse::<u64>().map_or(1, |number| number.wrapping_add(1)).to_string()
    } else {
        format!("{named}-other")
    }
}

fuzz_target!(|data: &[u8]| {
    let kinds: Vec<CiKind> = CiKind::ALL.into_iter().filter(|kind| kind.ci().api.is_some()).collect();
    let Some((&selector, body)) = data.split_first() else { return };
    let kind = kinds[usize::from(selector) % kinds.len()];
    let api = kind.ci().api.expect("a job API");
    let named = named(kind, body);
    if let Some(other) = located(kind, &another(kind, &named)) {
        assert!(api.read_answer(&other, body).is_err(), "an answer about another job was read");
    }
    if kind == CiKind::AzurePipelines {
        timeline(body);
    }
    let Some(asked) = located(kind, &named) else { return };
    let Ok(report) = api.read_answer(&asked, body) else { return };
    check(report);
});

/// `body` as the timeline of run 4711, asked about a job within it and about the run, the build
/// answer the run's.
fn timeline(body: &[u8]) {
    let Some(JobLocator::AzurePipelines(mut run)) = located(CiKind::AzurePipelines, "4711") else { return };
    let build =
        br#"{"id": 4711, "status": "inProgress", "queue": {"id": 1, "pool": {"name": "p", "isHosted": false}}}"#;
    let api = CiKind::AzurePipelines.ci().api.expect("a job API");
    let whole = JobLocator::AzurePipelines(run.clone());
    assert!(api.inner_path(&whole).is_some(), "a run is asked about in its timeline too");
    if let Ok(report) = api.read_answers(&whole, build, body) {
        if let Some(pool) = &report.runner {
            assert!(pool.name.is_none(), "a run names no agent");
        }
        // The broker reads only the fields it needs: a number out of `Value`'s range elsewhere
        // (`1e999`) is skipped there and unreadable here, so such a body is checked no further.
        if let (Some(_), Ok(timeline)) = (&report.runner, serde_json::from_slice::<Value>(body)) {
            let jobs = timeline["records"].as_array().into_iter().flatten().filter(|record| record["type"] == "Job");
            assert!(jobs.clone().count() > 0, "the pool is a run's only with its jobs shown");
            assert!(jobs.into_iter().all(|record| record["queueId"] == 1), "a job elsewhere: the pool is unknown");
        }
        check(report);
    }
    run.job = Some(NamedJob::new("e87e3d16-29b0-5003-7d86-82b704b96244", 1).expect("a job"));
    let asked = JobLocator::AzurePipelines(run);
    assert!(api.inner_path(&asked).is_some(), "a job within the run is asked about in its timeline");
    if let Ok(report) = api.read_answers(&asked, build, body) {
        check(report);
    }
}

fn check(report: JobReport) {
    assert!(matches!(report.liveness, Liveness::Running | Liveness::Finished | Liveness::Unknown));
    assert!(report.status.chars().count() <= 256 && !report.status.chars().any(char::is_control));
    if let Some(runner) = report.runner {
        assert!(runner.labels.len() <= 64);
        let facts = [runner.id, runner.name, runner.group, runner.queue, runner.runner_type, runner.manager]
            .into_iter()
            .flatten()
            .chain(runner.labels);
        for fact in facts {
            assert!(fact.chars().count() <= 256 && !fact.chars().any(char::is_control), "{fact:?}");
        }
    }
}
