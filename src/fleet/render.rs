//! The fleet as people and scripts read it: a table, JSON, or a self-contained HTML page.

use std::fmt::Write as _;

use super::cells::{RUNNER_HEADERS, figure_value, runner_cells, verdict};
use super::html;
use super::report::{FleetReport, Summary};
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
        Format::Table | Format::Html => runner_table(report),
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
            out.push_str(&runner_table(report));
            out
        }
    }
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
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

fn runner_table(report: &FleetReport) -> String {
    let mut out = table(RUNNER_HEADERS, report.runners.iter().map(runner_cells).collect());
    if report.runners_not_shown > 0 {
        let _ = writeln!(out, "({} more runners not shown)", report.runners_not_shown);
    }
    out
}
