//! Nothing outlives its job when the broker dies: the broker binary under concurrent exchanges,
//! killed with SIGKILL at random moments and restarted, then every job ended. Afterwards no job
//! token is alive in OpenBao (those a kill left unrecorded died within the mint grace), no job's
//! end was lost, and no job was handed a credential twice. `benches/crash/run.sh` runs the same
//! scenario for many more cycles against the release build.

use crate::support::crash::{self, Scenario};

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_killed_mid_exchange_leaves_nothing_alive_after_its_jobs_end() {
    let outcome = crash::run(&Scenario { cycles: 8, workers: 4, grace_seconds: 4, uptime_ms: (300, 1500) }).await;
    println!("{outcome:?}");

    assert!(outcome.granted > 0, "no exchange was granted: nothing was tested");
    assert_eq!(outcome.duplicated, 0, "a job was handed a credential twice");
    assert!(outcome.lost_ends.is_empty(), "job ends lost: {:?}", outcome.lost_ends);
    assert_eq!(outcome.left_open, 0, "leases still pending, active or being revoked");
    assert_eq!(outcome.alive_after, 0, "job tokens alive in OpenBao after every job ended");
}

/// The benchmark's run (`benches/crash/run.sh`): the same scenario and assertions over as many
/// cycles as `CRASH_CYCLES` says, reported as one JSON line.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a benchmark: benches/crash/run.sh runs it against the release build"]
async fn many_kill_cycles_under_load() {
    let number = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let uptime = std::env::var("CRASH_UPTIME_MS").unwrap_or_default();
    let uptime_ms = uptime.split_once(',').and_then(|(low, high)| Some((low.parse().ok()?, high.parse().ok()?)));
    let scenario = Scenario {
        cycles: number("CRASH_CYCLES", 50) as usize,
        workers: number("CRASH_WORKERS", 8) as usize,
        grace_seconds: number("CRASH_GRACE_SECONDS", 5),
        uptime_ms: uptime_ms.unwrap_or((300, 1500)),
    };
    let started = std::time::Instant::now();
    let outcome = crash::run(&scenario).await;
    let report = serde_json::json!({
        "crash_bench": std::env::var("CRASH_COMMIT").unwrap_or_default(),
        "cycles": outcome.kills,
        "workers": scenario.workers,
        "grace_seconds": scenario.grace_seconds,
        "jobs": outcome.jobs,
        "granted": outcome.granted,
        "unrecorded_by_kills": outcome.unrecorded,
        "recovery_ms": outcome.recovery.as_millis() as u64,
        "alive_after_all_jobs_ended": outcome.alive_after,
        "lost_job_ends": outcome.lost_ends.len(),
        "duplicated": outcome.duplicated,
        "leases_left_open": outcome.left_open,
        "seconds": started.elapsed().as_secs(),
    });
    println!("{report}");
    assert_eq!(outcome.duplicated, 0);
    assert!(outcome.lost_ends.is_empty());
    assert_eq!(outcome.left_open, 0);
    assert_eq!(outcome.alive_after, 0);
}
