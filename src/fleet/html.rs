//! `runners report --format html`: one page, no script and nothing fetched (its Content Security
//! Policy forbids any load), for people who would rather look than read. Every value from a CI
//! (runner names, groups) is escaped: they are attacker-chosen text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::as_text::{RUNNER_HEADERS, figure_value, runner_cells, verdict};
use super::report::{FleetReport, Summary};
use crate::table::timestamp;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1b1f24}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left}\
th{background:#f6f8fa}.met{color:#1a7f37;font-weight:600}.missed{color:#cf222e;font-weight:600}\
.nodata{color:#57606a}figure{margin:1em 0}svg text{font-size:11px}";

/// Bar colours, one per tier in name order; `(none)` is grey.
const PALETTE: &[&str] = &["#0969da", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7b83", "#bc4c00"];

pub fn page(report: &FleetReport) -> String {
    let summary = &report.summary;
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
    );
    out.push_str("<link rel=\"icon\" href=\"data:,\"><title>ci-creds runner report</title>");
    let _ = write!(out, "<style>{STYLE}</style></head><body>");
    let _ = write!(
        out,
        "<h1>Runner report</h1><p>Generated {} for jobs seen since {}: {} jobs, {} on self-hosted runners.</p>",
        timestamp(summary.generated_at),
        timestamp(summary.since),
        summary.jobs,
        summary.self_hosted_jobs
    );
    summary_table(&mut out, summary);
    tier_table(&mut out, summary);
    chart(&mut out, summary);
    out.push_str("<h2>Runners</h2><table id=\"runners\"><tr>");
    for header in RUNNER_HEADERS {
        let _ = write!(out, "<th>{}</th>", escape(header));
    }
    out.push_str("</tr>");
    for runner in &report.runners {
        out.push_str("<tr>");
        for cell in runner_cells(runner) {
            let _ = write!(out, "<td>{}</td>", escape(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    if report.runners_not_shown > 0 {
        let _ = write!(out, "<p id=\"not-shown\">{} more runners not shown.</p>", report.runners_not_shown);
    }
    out.push_str("</body></html>\n");
    out
}

fn summary_table(out: &mut String, summary: &Summary) {
    out.push_str(
        "<h2>Summary</h2><table id=\"summary\"><tr><th>Figure</th><th>Value</th><th>Target</th><th>Verdict</th></tr>",
    );
    for figure in &summary.figures {
        let class = match figure.met {
            Some(true) => "met",
            Some(false) => "missed",
            None => "nodata",
        };
        let _ = write!(
            out,
            "<tr data-figure=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
            figure.name,
            escape(figure.description),
            escape(&figure_value(figure)),
            escape(figure.target),
            verdict(figure)
        );
    }
    out.push_str("</table>");
}

fn tier_table(out: &mut String, summary: &Summary) {
    out.push_str("<h2>Tiers</h2><table id=\"tiers\"><tr><th>Tier</th><th>Jobs</th><th>Roles granted</th></tr>");
    for tier in &summary.tiers {
        let name = tier.tier.as_deref().unwrap_or("(none)");
        let _ = write!(out, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", escape(name), tier.jobs, tier.roles_granted);
    }
    out.push_str("</table>");
}

/// Jobs per tier per day, as stacked bars.
fn chart(out: &mut String, summary: &Summary) {
    let mut per_day: BTreeMap<&str, Vec<(&str, usize)>> = BTreeMap::new();
    for (day, tier, jobs) in &summary.days {
        per_day.entry(day).or_default().push((tier, *jobs));
    }
    let tiers: Vec<&str> = {
        let mut tiers: Vec<&str> = summary.days.iter().map(|(_, tier, _)| tier.as_str()).collect();
        tiers.sort_unstable();
        tiers.dedup();
        tiers
    };
    let colour = |tier: &str| match tiers.iter().position(|t| *t == tier) {
        _ if tier == "(none)" => "#8c959f",
        Some(i) => PALETTE[i % PALETTE.len()],
        None => "#8c959f",
    };
    let tallest = per_day.values().map(|bars| bars.iter().map(|(_, n)| n).sum::<usize>()).max().unwrap_or(0).max(1);
    let (bar, gap, height) = (24usize, 8usize, 160usize);
    let width = (per_day.len() * (bar + gap)).max(bar + gap) + 40;
    out.push_str("<h2>Jobs per tier per day</h2><figure>");
    let _ = write!(
        out,
        "<svg id=\"chart\" role=\"img\" aria-label=\"jobs per tier per day\" width=\"{width}\" height=\"{}\" viewBox=\"0 0 {width} {}\">",
        height + 40,
        height + 40
    );
    for (i, (day, bars)) in per_day.iter().enumerate() {
        let x = 30 + i * (bar + gap);
        let mut top = height;
        for (tier, jobs) in bars {
            let h = jobs * height / tallest;
            top -= h;
            let _ = write!(
                out,
                "<rect x=\"{x}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"{}\"><title>{} {}: {jobs} jobs</title></rect>",
                top + 10,
                colour(tier),
                escape(day),
                escape(tier)
            );
        }
        let _ = write!(out, "<text x=\"{x}\" y=\"{}\">{}</text>", height + 25, escape(day.get(5..).unwrap_or(day)));
    }
    let _ = write!(out, "<text x=\"0\" y=\"20\">{tallest}</text></svg><figcaption>");
    for tier in &tiers {
        let _ = write!(out, "<span style=\"color:{}\">&#9632;</span> {} ", colour(tier), escape(tier));
    }
    out.push_str("</figcaption></figure>");
}

/// Text safe inside an element or a quoted attribute.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
