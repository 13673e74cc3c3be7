//! The fleet report at fleet scale: seeds N judged jobs through the store's own write path
//! (`record_runner_jobs`, as the broker's batching task calls it) spread over 30 days, one runner
//! per 50 jobs and 2,000 repositories, then times the report as `runners report` and the
//! background refresh of `/metrics` compute it, and prints the process's peak RSS before and
//! after. Run: `cargo bench --bench fleet_report [-- JOBS]` (SQLite in a temp dir), or with
//! `FLEET_BENCH_URL=postgres://…` against an empty PostgreSQL database.
//! `cargo test --bench fleet_report -- --bench JOBS` runs it without a release build; `--rows`
//! also reads every judged job's row, as the report did before the store aggregated it;
//! `--rounds N` computes the report N times (3). Before the report, the figures alone are
//! computed as the `/metrics` refresh does (`fleet::summary`), with the peak RSS after.
//! `--keep DIR` seeds the SQLite store `DIR/store.db` and keeps it (for `fleet_scrape.sh`);
//! `--seed-only` stops once seeded; `--seeded` (with `--keep DIR` or `FLEET_BENCH_URL`) reads a
//! store seeded before, JOBS only naming it.

use std::time::Instant;

use ci_creds::clock::now;
use ci_creds::fleet;
use ci_creds::fleet::RunnerJob;
use ci_creds::store::Store;

const DAY: i64 = 24 * 3600;
const BATCH: usize = 4096;

#[tokio::main]
async fn main() {
    // Only `--bench` starts it: `cargo test --all-targets` runs this file too.
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize =
        args.iter().position(|arg| arg == "--rounds").and_then(|at| args.get(at + 1)?.parse().ok()).unwrap_or(3);
    let jobs: usize = args
        .iter()
        .enumerate()
        .filter(|(at, _)| {
            args.get(at.wrapping_sub(1)).is_none_or(|before| !["--rounds", "--keep"].contains(&before.as_str()))
        })
        .find_map(|(_, arg)| arg.parse().ok())
        .unwrap_or(100_000);
    let value_of = |name: &str| args.iter().position(|arg| arg == name).and_then(|at| args.get(at + 1));
    let temporary = tempfile::tempdir().unwrap();
    let dir = value_of("--keep").map_or(temporary.path().to_owned(), std::path::PathBuf::from);
    let url =
        std::env::var("FLEET_BENCH_URL").unwrap_or_else(|_| format!("sqlite://{}", dir.join("store.db").display()));
    let store = Store::connect(&url).await.unwrap();
    let runners = (jobs / 50).max(1);
    let now = now();

    let started = Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    let seeded = args.iter().any(|arg| arg == "--seeded");
    for n in (0..jobs).filter(|_| !seeded) {
        let runner = n % runners;
        let self_hosted = !runner.is_multiple_of(4);
        let single_use = self_hosted && !runner.is_multiple_of(3);
        batch.push(RunnerJob {
            issuer: if runner.is_multiple_of(5) { "gitlab" } else { "github" }.into(),
            job_id: format!("job-{n}"),
            repository: format!("org/repo-{}", (n * 7) % 2000),
            runner_key: Some(format!("{runner}/runner-{runner}")),
            runner_name: Some(format!("runner-{runner}")),
            runner_group: Some(format!("group-{}", runner % 20)),
            runner_environment: Some(if self_hosted { "self-hosted" } else { "github-hosted" }.into()),
            tier: Some(
                if single_use {
                    "ephemeral"
                } else if self_hosted {
                    "persistent"
                } else {
                    "hosted"
                }
                .into(),
            ),
            single_use,
            roles_granted: 1,
            refused: n.is_multiple_of(97),
            seen_at: now - (n as i64 * 30 * DAY / jobs as i64),
        });
        if batch.len() == BATCH {
            store.record_runner_jobs(std::mem::take(&mut batch), 90 * DAY).await.unwrap();
        }
    }
    if !seeded {
        store.record_runner_jobs(batch, 90 * DAY).await.unwrap();
    }
    println!(
        "seeded {jobs} judged jobs on {runners} runners in {:.1?} ({url_kind})",
        started.elapsed(),
        url_kind = kind(&url)
    );

    if args.iter().any(|arg| arg == "--seed-only") {
        return;
    }
    let rss_before = peak_rss_kib();
    let started = Instant::now();
    let summary = fleet::summary(&store, now - 30 * DAY, now).await.unwrap();
    println!(
        "figures alone (the /metrics refresh): {} jobs in {:.1?}; peak RSS {} MiB after seeding, {} MiB after",
        summary.jobs,
        started.elapsed(),
        rss_before / 1024,
        peak_rss_kib() / 1024
    );
    for round in 1..=rounds {
        // `runners report` as run with no limit: the worst 500, table then JSON.
        let started = Instant::now();
        let report = fleet::read(&store, now - 30 * DAY, now, &fleet::RunnerFilter::default().bounded()).await.unwrap();
        let (table, json) = (written(&report, fleet::Format::Table), written(&report, fleet::Format::Json));
        println!(
            "round {round}: the worst {} runners of {} in {:.1?} (table {} KiB, JSON {} KiB); peak RSS {} MiB",
            report.runners.len(),
            report.runners.len() + report.runners_not_shown,
            started.elapsed(),
            table / 1024,
            json / 1024,
            peak_rss_kib() / 1024
        );
        // Every runner (`--all`), rendered one format at a time, as one `runners report` run does.
        let started = Instant::now();
        let report = fleet::read(&store, now - 30 * DAY, now, &fleet::RunnerFilter::default()).await.unwrap();
        let table = written(&report, fleet::Format::Table);
        let peak_after_table = peak_rss_kib();
        let json = written(&report, fleet::Format::Json);
        println!(
            "round {round}: report of {} jobs, {} runners in {:.1?} (table {} KiB, peak RSS {} MiB; JSON {} KiB, peak RSS {} MiB)",
            report.summary.jobs,
            report.runners.len(),
            started.elapsed(),
            table / 1024,
            peak_after_table / 1024,
            json / 1024,
            peak_rss_kib() / 1024
        );
    }
    println!("peak RSS: {} MiB after seeding, {} MiB after the reports", rss_before / 1024, peak_rss_kib() / 1024);
    if std::env::args().any(|arg| arg == "--rows") {
        // What the report read before it was aggregated by the store: every judged job's row.
        let started = Instant::now();
        let rows = store.runner_jobs_since(now - 30 * DAY).await.unwrap();
        println!(
            "reading every row as before: {} rows in {:.1?}, peak RSS {} MiB",
            rows.len(),
            started.elapsed(),
            peak_rss_kib() / 1024
        );
    }
}

/// The bytes `runners report` writes in `format`, counted as written, as it writes them to a file.
fn written(report: &fleet::FleetReport, format: fleet::Format) -> usize {
    struct Counted(usize);
    impl std::io::Write for Counted {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counted = Counted(0);
    fleet::write_report(report, format, &mut std::io::BufWriter::new(&mut counted)).unwrap();
    counted.0
}

fn kind(url: &str) -> &'static str {
    if url.starts_with("postgres") { "postgres" } else { "sqlite" }
}

/// The process's peak resident set (`VmHWM`), KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
