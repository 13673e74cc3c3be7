//! A CI API's job answer, as the broker reads it at an exchange and in reconciliation: the first
//! byte picks the CI (GitHub, GitLab, Buildkite), the rest is the body. Whatever it says, a
//! readable answer settles to running, finished or unknown, and its runner facts stay bounded.
#![no_main]

use ci_creds::ci_api::{Liveness, parse_answer};
use ci_creds::job::CiKind;
use libfuzzer_sys::fuzz_target;

const KINDS: [CiKind; 3] = [CiKind::Github, CiKind::Gitlab, CiKind::Buildkite];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let kind = KINDS[usize::from(selector) % KINDS.len()];
    let Ok(report) = parse_answer(kind, body) else { return };
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
