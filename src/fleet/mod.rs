//! The fleet report: every runner the broker has seen, and the runner hygiene figures security
//! teams track, computed from every judged job (refused ones included). `report` computes, pure;
//! `render` writes a table, JSON, or one self-contained HTML page.

mod cells;
mod html;
mod render;
mod report;

#[cfg(test)]
mod tests;

pub use render::{Format, render_list, render_report};
pub use report::{DAY, Figure, FleetReport, RunnerRow, STALE_AFTER, Summary, TierRow, build};
