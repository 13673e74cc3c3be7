//! A CI API's job answer, as the broker reads it at an exchange and in reconciliation: the first
//! byte picks the CI (each with a job API), the rest is the body. Whatever it says, a readable
//! answer settles to running, finished or unknown, its runner facts stay bounded, and an answer
//! about another job than the one asked about is never read.
#![no_main]

use ci_creds::ci::{JobLocator, Liveness};
use ci_creds::job::{CiKind, Job};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Where the broker would ask about `job_id` of `kind`.
fn located(kind: CiKind, job_id: &str) -> JobLocator {
    let mut job = Job::new("ci", job_id, "octo-org/octo-repo");
    job.kind = Some(kind);
    job.repository_id = Some("20".into());
    let claims = json!({"organization_slug": "acme-inc", "pipeline_slug": "app", "build_number": 1});
    job.claims = claims.as_object().cloned().unwrap_or_default();
    JobLocator::of(&job).expect("every CI with a job API locates this job")
}

fuzz_target!(|data: &[u8]| {
    let kinds: Vec<CiKind> = CiKind::ALL.into_iter().filter(|kind| kind.ci().api.is_some()).collect();
    let Some((&selector, body)) = data.split_first() else { return };
    let kind = kinds[usize::from(selector) % kinds.len()];
    let api = kind.ci().api.expect("a job API");
    let named = match serde_json::from_slice::<Value>(body).ok().map(|answer| answer["id"].clone()) {
        Some(Value::String(id)) => id,
        Some(Value::Number(id)) => id.to_string(),
        _ => "unnamed".to_owned(),
    };
    let another = format!("{named}-other");
    assert!(api.read_answer(&located(kind, &another), body).is_err(), "an answer about another job was read");
    let Ok(report) = api.read_answer(&located(kind, &named), body) else { return };
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
});
