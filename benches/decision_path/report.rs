//! The summary the goal is stated in: each stage's time per operation, its throughput, and that
//! throughput as a share of the first stage's, read from the estimates criterion has just written.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;

/// Prints one line per stage measured by this run (`since`: when it started); stages skipped by a
/// filter keep older estimates on disk, which must not be mixed with fresh ones.
pub fn print_ratios(group: &str, stages: &[&str], since: SystemTime) {
    let home = criterion_home();
    let measured: Vec<(&str, f64)> = stages
        .iter()
        .filter_map(|stage| {
            fresh_estimate(&home.join(group).join(stage).join("new/estimates.json"), since).map(|ns| (*stage, ns))
        })
        .collect();
    if measured.is_empty() {
        return;
    }
    // Without a fresh baseline there is nothing to divide by; the times alone still inform.
    let baseline_ns = measured.iter().find(|(stage, _)| *stage == stages[0]).map(|&(_, ns)| ns);
    println!("\n{group}: throughput as a share of {}'s (goal for the full path: >= 50 %)", stages[0]);
    println!("{:<26} {:>12} {:>12} {:>8}", "stage", "time/op", "ops/s", "ratio");
    for (stage, ns) in measured {
        let ratio = baseline_ns.map_or_else(|| "-".to_owned(), |baseline| format!("{:.0} %", 100.0 * baseline / ns));
        println!("{stage:<26} {:>9.1} µs {:>12.0} {ratio:>8}", ns / 1e3, 1e9 / ns);
    }
}

/// Criterion's time per iteration in nanoseconds: the regression slope it reports for linear
/// sampling, else the mean; `None` when the file is missing or older than this run.
fn fresh_estimate(path: &Path, since: SystemTime) -> Option<f64> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    if modified < since {
        return None;
    }
    let estimates: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    ["slope", "mean"].iter().find_map(|kind| estimates[kind]["point_estimate"].as_f64())
}

/// Where criterion writes, found the way criterion itself finds it: `CRITERION_HOME`, else
/// `$CARGO_TARGET_DIR/criterion`, else the target directory `cargo metadata` names.
fn criterion_home() -> PathBuf {
    if let Some(home) = env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).or_else(|| {
        let cargo = env::var_os("CARGO")?;
        let output = Command::new(cargo).args(["metadata", "--format-version", "1", "--no-deps"]).output().ok()?;
        let metadata: Value = serde_json::from_slice(&output.stdout).ok()?;
        metadata["target_directory"].as_str().map(PathBuf::from)
    });
    target.unwrap_or_else(|| PathBuf::from("target")).join("criterion")
}
