//! The fleet as people and scripts read it: a table, JSON, or a self-contained HTML page.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::as_text::{RUNNER_HEADERS, figure_value, runner_cells, verdict};
use super::html;
use super::report::{FleetReport, Summary};
use crate::table::{table, timestamp, write_table};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Html,
}

/// `runners list`: every runner seen (table or JSON; HTML is the report's).
pub fn render_list(report: &FleetReport, format: Format) -> String {
    text_of(|out| write_list(report, format, out))
}

/// `runners report`: the summary, then the runners.
pub fn render_report(report: &FleetReport, format: Format) -> String {
    text_of(|out| write_report(report, format, out))
}

/// [`render_list`] written to `out` as it is rendered: however many runners are shown, no
/// second copy of them is held as text.
pub fn write_list(report: &FleetReport, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Json => json(&report.runners, out),
        Format::Table | Format::Html => runner_table(report, out),
    }
}

/// [`render_report`] written to `out` as it is rendered (the page, bounded, is built first).
pub fn write_report(report: &FleetReport, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Json => json(report, out),
        Format::Html => out.write_all(html::page(report).as_bytes()),
        Format::Table => {
            writeln!(out, "{}", summary_text(&report.summary))?;
            runner_table(report, out)
        }
    }
}

fn text_of(write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
    let mut text = Vec::new();
    // Writing to memory cannot fail, and every renderer writes UTF-8.
    let _ = write(&mut text);
    String::from_utf8(text).unwrap_or_default()
}

fn json<T: serde::Serialize + ?Sized>(value: &T, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
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

fn runner_table(report: &FleetReport, out: &mut impl Write) -> io::Result<()> {
    write_table(RUNNER_HEADERS, report.runners.iter().map(runner_cells), out)?;
    if report.runners_not_shown > 0 {
        writeln!(out, "({} more runners not shown)", report.runners_not_shown)?;
    }
    Ok(())
}
