//! What the soak watches from outside the broker: its memory from `/proc`, and its store's size
//! on disk and in rows, read through a separate read-only connection.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, SqliteConnection};

use super::support::broker::Broker;

pub struct Sample {
    pub at: Duration,
    pub jobs_done: u64,
    /// Resident and peak resident memory of the broker process, in KiB.
    pub rss_kib: u64,
    pub peak_rss_kib: u64,
    /// The database with its write-ahead log.
    pub store_bytes: u64,
    pub audit_bytes: u64,
    pub rows: Rows,
}

#[derive(Default)]
pub struct Rows {
    pub jobs: i64,
    pub leases: i64,
    pub revoking: i64,
    pub exchanged_tokens: i64,
    pub deliveries: i64,
}

impl Sample {
    pub async fn take(broker: &Broker, started: Instant, jobs_done: u64) -> Self {
        let status = broker.pid().and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok());
        let status = status.unwrap_or_default();
        let database = broker.database();
        let wal = database.with_extension("db-wal");
        Self {
            at: started.elapsed(),
            jobs_done,
            rss_kib: kib(&status, "VmRSS:"),
            peak_rss_kib: kib(&status, "VmHWM:"),
            store_bytes: file_size(&database) + file_size(&wal),
            audit_bytes: file_size(&broker.audit_path()),
            rows: Rows::count(&database).await.unwrap_or_default(),
        }
    }
}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = self.jobs_done as f64 / self.at.as_secs_f64().max(1e-3);
        write!(
            f,
            "t={:>6.0}s jobs={:>8} ({rate:>6.1}/s) rss={:>6.1} MiB peak={:>6.1} MiB store={:>7.1} MiB \
             rows: jobs={} leases={} revoking={} tokens={} deliveries={} audit={:.0} MiB",
            self.at.as_secs_f64(),
            self.jobs_done,
            mib(self.rss_kib * 1024),
            mib(self.peak_rss_kib * 1024),
            mib(self.store_bytes),
            self.rows.jobs,
            self.rows.leases,
            self.rows.revoking,
            self.rows.exchanged_tokens,
            self.rows.deliveries,
            mib(self.audit_bytes),
        )
    }
}

impl Rows {
    async fn count(database: &Path) -> Result<Self, sqlx::Error> {
        let mut connection: SqliteConnection =
            SqliteConnectOptions::new().filename(database).read_only(true).connect().await?;
        let mut count = async |sql: &str| sqlx::query_scalar::<_, i64>(sql).fetch_one(&mut connection).await;
        Ok(Self {
            jobs: count("SELECT COUNT(*) FROM jobs").await?,
            leases: count("SELECT COUNT(*) FROM leases").await?,
            revoking: count("SELECT COUNT(*) FROM leases WHERE state = 'revoking'").await?,
            exchanged_tokens: count("SELECT COUNT(*) FROM exchanged_tokens").await?,
            deliveries: count("SELECT COUNT(*) FROM webhook_deliveries").await?,
        })
    }
}

/// Waits until no lease is left to revoke; returns how long that took.
pub async fn until_drained(database: &Path) -> Duration {
    let started = Instant::now();
    while Rows::count(database).await.map_or(true, |rows| rows.revoking > 0) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    started.elapsed()
}

pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// RSS and store size per quarter of the run: level once the sweeper prunes, or growing.
pub fn levels(samples: &[Sample]) -> String {
    let mut text = String::from("quarter   jobs done   RSS max (MiB)   store max (MiB)   leases max");
    let Some(last) = samples.last() else { return text };
    for quarter in 1..=4u32 {
        let (from, to) = (last.at * (quarter - 1) / 4, last.at * quarter / 4);
        let within: Vec<&Sample> = samples.iter().filter(|s| s.at > from && s.at <= to).collect();
        let Some(end) = within.last() else { continue };
        let rss = within.iter().map(|s| s.rss_kib).max().unwrap_or_default();
        let store = within.iter().map(|s| s.store_bytes).max().unwrap_or_default();
        let leases = within.iter().map(|s| s.rows.leases).max().unwrap_or_default();
        text.push_str(&format!(
            "\nQ{quarter}        {:>9}   {:>13.1}   {:>15.1}   {leases:>10}",
            end.jobs_done,
            mib(rss * 1024),
            mib(store),
        ));
    }
    text.push_str(&format!("\npeak RSS over the run: {:.1} MiB", mib(last.peak_rss_kib * 1024)));
    text
}

fn kib(status: &str, field: &str) -> u64 {
    let line = status.lines().find(|line| line.starts_with(field)).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or_default()
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or_default()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Mean durations the broker itself measured, from its `/metrics`: where a job's time went.
pub fn timings(metrics: &str) -> String {
    let mean = |series: &str| {
        let value = |suffix: &str| {
            let name = format!("{}_{suffix}{}", series.split('{').next().unwrap_or(series), label_part(series));
            metrics
                .lines()
                .find_map(|line| line.strip_prefix(name.as_str()))
                .and_then(|rest| rest.trim().parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        };
        format!("{:.2} ms over {}", value("sum") / value("count") * 1e3, value("count"))
    };
    [
        ("exchange (granted)", "ci_creds_exchange_duration_seconds{outcome=\"granted\"}"),
        ("  vault mint", "ci_creds_backend_request_duration_seconds{backend=\"vault\",operation=\"mint\"}"),
        ("vault revoke", "ci_creds_backend_request_duration_seconds{backend=\"vault\",operation=\"revoke\"}"),
        ("revocation exposure (queue)", "ci_creds_revocation_exposure_seconds"),
    ]
    .iter()
    .map(|(what, series)| format!("{what}: mean {}", mean(series)))
    .collect::<Vec<_>>()
    .join("\n")
}

fn label_part(series: &str) -> &str {
    series.find('{').map_or("", |at| &series[at..])
}
