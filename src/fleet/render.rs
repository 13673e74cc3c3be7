//! The fleet as people and scripts read it: a table, JSON, or a self-contained HTML page.

use std::fmt::Write as _;

use super::html;
use super::report::{Figure, FleetReport, RunnerRow, Summary};
use crate::inspect::{table, timestamp};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Html,
}

/// `runners list`: every runner seen (table or JSON; HTML is the report's).
pub fn render_list(report: &FleetReport, format: Format) -> String {
    match format {
        Format::Json => json(&report.runners),
        Format::Table | Format::Html => runner_table(&report.runners),
    }
}

/// `runners report`: the summary, then the runners.
pub fn render_report(report: &FleetReport, format: Format) -> String {
    match format {
        Format::Json => json(report),
        Format::Html => html::page(report),
        Format::Table => {
            let mut out = summary_text(&report.summary);
            out.push('\n');
            out.push_str(&runner_table(&report.runners));
            out
        }
    }
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

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

fn summary_text(summary: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "runner hygiene since {}: {} jobs, {} on self-hosted runners",
        timestamp(summary.since),
        summary.jobs,
        summary.self_hosted_jobs
    );
    let rows = summary
        .figures
        .iter()
        .map(|f| vec![f.description.to_owned(), figure_value(f), f.target.to_owned(), verdict(f).to_owned()])
        .collect();
    out.push_str(&table(&["FIGURE", "VALUE", "TARGET", "VERDICT"], rows));
    out.push('\n');
    let tiers = summary
        .tiers
        .iter()
        .map(|t| {
            vec![t.tier.clone().unwrap_or_else(|| "(none)".into()), t.jobs.to_string(), t.roles_granted.to_string()]
        })
        .collect();
    out.push_str(&table(&["TIER", "JOBS", "ROLES GRANTED"], tiers));
    out
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
        runner.jobs.to_string(),
        runner.repositories.to_string(),
        flag(runner.single_use),
        flag(runner.reused),
    ]
}

pub(super) const RUNNER_HEADERS: &[&str] = &[
    "ISSUER",
    "KEY",
    "NAME",
    "GROUP/QUEUE",
    "ENVIRONMENT",
    "TIER",
    "FIRST SEEN",
    "LAST SEEN",
    "JOBS",
    "REPOSITORIES",
    "SINGLE-USE",
    "REUSED",
];

fn runner_table(runners: &[RunnerRow]) -> String {
    table(RUNNER_HEADERS, runners.iter().map(runner_cells).collect())
}
