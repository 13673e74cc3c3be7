//! A figure and a runner as text, the same in every format: the table, and the HTML page.

use super::report::{Figure, RunnerRow};
use crate::table::timestamp;

/// The runner table's columns, in the order of [`runner_cells`].
pub(super) const RUNNER_HEADERS: &[&str] = &[
    "ISSUER",
    "KEY",
    "NAME",
    "GROUP/QUEUE",
    "ENVIRONMENT",
    "TIER",
    "FIRST SEEN",
    "LAST SEEN",
    "REFUSED",
    "MISSED",
    "JOBS",
    "REPOSITORIES",
    "SINGLE-USE",
    "REUSED",
];

/// A figure's value as shown: a share in percent, a count as is, `–` when there is none.
pub(super) fn figure_value(figure: &Figure) -> String {
    match figure.value {
        None => "–".to_owned(),
        Some(share) if figure.name.ends_with("_share") => format!("{:.1} %", share * 100.0),
        Some(count) => format!("{count}"),
    }
}

pub(super) fn verdict(figure: &Figure) -> &'static str {
    match figure.met {
        Some(true) => "met",
        Some(false) => "MISSED",
        None => "no data",
    }
}

pub(super) fn runner_cells(runner: &RunnerRow) -> Vec<String> {
    let flag = |on: bool| if on { "yes" } else { "no" }.to_owned();
    vec![
        runner.issuer.clone(),
        runner.key.clone().unwrap_or_else(|| "(unknown)".into()),
        runner.name.clone().unwrap_or_default(),
        runner.group.clone().unwrap_or_default(),
        runner.environment.clone().unwrap_or_default(),
        runner.tier.clone().unwrap_or_default(),
        timestamp(runner.first_seen),
        timestamp(runner.last_seen),
        refused(runner),
        if runner.missed.is_empty() { "-".to_owned() } else { runner.missed.join(",") },
        runner.jobs.to_string(),
        runner.repositories.to_string(),
        flag(runner.single_use),
        flag(runner.reused),
    ]
}

/// Refused attempts by reason, `replayed:2,policy:1`; `-` for none.
fn refused(runner: &RunnerRow) -> String {
    if runner.refused.is_empty() {
        return "-".to_owned();
    }
    runner.refused.iter().map(|(reason, attempts)| format!("{reason}:{attempts}")).collect::<Vec<_>>().join(",")
}
