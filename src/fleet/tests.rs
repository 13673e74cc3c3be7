//! The report's figures on a known history, and the page's escaping of what a CI told.

use super::report::DAY;
use super::*;
use crate::store::Store;

const NOW: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z

struct Seen {
    job: &'static str,
    runner: Option<&'static str>,
    repository: &'static str,
    environment: &'static str,
    tier: Option<&'static str>,
    single_use: bool,
    days_ago: i64,
}

fn job(seen: Seen) -> RunnerJob {
    RunnerJob {
        issuer: "github".into(),
        job_id: seen.job.into(),
        repository: seen.repository.into(),
        runner_key: seen.runner.map(str::to_owned),
        runner_name: seen.runner.map(|r| format!("name-{r}")),
        runner_group: None,
        runner_environment: Some(seen.environment.into()),
        tier: seen.tier.map(str::to_owned),
        single_use: seen.single_use,
        roles_granted: 1,
        refused: false,
        seen_at: NOW - seen.days_ago * DAY,
    }
}

/// Ten self-hosted jobs, nine on single-use runners (one of which served two jobs); a
/// persistent runner shared by two repositories; another persistent runner last seen 40 days
/// ago; two hosted jobs and one whose runner nobody told.
fn history() -> Vec<RunnerJob> {
    let eph = |job, runner, days_ago| Seen {
        job,
        runner: Some(runner),
        repository: "octo-org/app",
        environment: "self-hosted",
        tier: Some("ephemeral"),
        single_use: true,
        days_ago,
    };
    let mut jobs: Vec<RunnerJob> = vec![
        job(Seen {
            job: "old",
            runner: Some("9/stale"),
            repository: "octo-org/app",
            environment: "self-hosted",
            tier: Some("persistent"),
            single_use: false,
            days_ago: 40,
        }),
        job(eph("e1", "1/eph-1", 3)),
        job(eph("e2", "2/eph-2", 3)),
        job(eph("e3", "3/eph-3", 2)),
        job(eph("e4", "4/eph-4", 2)),
        job(eph("e5", "5/eph-5", 2)),
        job(eph("e6", "6/eph-6", 1)),
        job(eph("e7", "7/eph-7", 1)),
        job(eph("e8", "8/reused", 1)),
        job(eph("e9", "8/reused", 0)),
        job(Seen {
            job: "p1",
            runner: Some("20/shared"),
            repository: "octo-org/app",
            environment: "self-hosted",
            tier: Some("persistent"),
            single_use: false,
            days_ago: 1,
        }),
        job(Seen {
            job: "h1",
            runner: Some("30/hosted"),
            repository: "octo-org/app",
            environment: "github-hosted",
            tier: Some("hosted"),
            single_use: false,
            days_ago: 1,
        }),
        job(Seen {
            job: "h2",
            runner: Some("31/hosted"),
            repository: "octo-org/web",
            environment: "github-hosted",
            tier: Some("hosted"),
            single_use: false,
            days_ago: 0,
        }),
        job(Seen {
            job: "u1",
            runner: None,
            repository: "octo-org/web",
            environment: "github-hosted",
            tier: None,
            single_use: false,
            days_ago: 0,
        }),
    ];
    jobs.push(job(Seen {
        job: "p2",
        runner: Some("20/shared"),
        repository: "octo-org/infra",
        environment: "self-hosted",
        tier: Some("persistent"),
        single_use: false,
        days_ago: 0,
    }));
    jobs.sort_by_key(|j| j.seen_at);
    jobs
}

/// The report of `jobs` as the store aggregates them, with `reused` marked reused by the store.
async fn report_of(jobs: &[RunnerJob], reused: &[(&str, &str)]) -> FleetReport {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("store.db").display())).await.unwrap();
    store.record_runner_jobs(jobs.to_vec(), 365 * DAY).await.unwrap();
    for (issuer, key) in reused {
        let keep = crate::clock::now() + DAY;
        store.claim_runner(issuer, key, "first", keep).await.unwrap();
        store.claim_runner(issuer, key, "second", keep).await.unwrap();
    }
    read(&store, NOW - 30 * DAY, NOW, &RunnerFilter::default()).await.unwrap()
}

fn figure<'r>(report: &'r FleetReport, name: &str) -> &'r Figure {
    report.summary.figures.iter().find(|f| f.name == name).unwrap()
}

#[tokio::test]
async fn the_figures_of_a_known_history() {
    let report = report_of(&history(), &[]).await;
    let summary = &report.summary;
    assert_eq!((summary.jobs, summary.self_hosted_jobs), (14, 11), "the 40-day-old job is outside the window");
    let share = figure(&report, "single_use_share");
    assert_eq!((share.value, share.met), (Some(9.0 / 11.0), Some(false)), "9 of 11 is under 90 %");
    let multi = figure(&report, "multi_repository_runners");
    assert_eq!(
        (multi.value, multi.met),
        (Some(1.0), Some(false)),
        "20/shared served app and infra; hosted ones don't count"
    );
    let reused = figure(&report, "reused_single_use_runners");
    assert_eq!((reused.value, reused.met), (Some(1.0), Some(false)), "8/reused served e8 and e9");
    let stale = figure(&report, "stale_persistent_runners");
    assert_eq!((stale.value, stale.met), (Some(1.0), Some(false)), "9/stale, judged on every record");
    let tiers: Vec<(Option<&str>, usize)> = summary.tiers.iter().map(|t| (t.tier.as_deref(), t.jobs)).collect();
    assert_eq!(tiers, [(None, 1), (Some("ephemeral"), 9), (Some("hosted"), 2), (Some("persistent"), 2)]);
    assert_eq!(summary.days.iter().map(|(_, _, n)| n).sum::<usize>(), 14);
    assert!(summary.days.contains(&("2025-12-29".to_owned(), "ephemeral".to_owned(), 2)), "{:?}", summary.days);

    let runners = &report.runners;
    assert_eq!(runners.len(), 12, "11 identified runners in the window, and one row for the untold");
    let shared = runners.iter().find(|r| r.key.as_deref() == Some("20/shared")).unwrap();
    assert_eq!((shared.jobs, shared.repositories, shared.single_use, shared.reused), (2, 2, false, false));
    assert!(runners.iter().find(|r| r.key.as_deref() == Some("8/reused")).unwrap().reused);
}

#[tokio::test]
async fn a_clean_fleet_meets_every_target_and_an_empty_one_has_no_data() {
    let clean: Vec<RunnerJob> = history()
        .into_iter()
        .filter(|j| j.single_use && j.job_id != "e9" || j.runner_environment.as_deref() != Some("self-hosted"))
        .collect();
    let report = report_of(&clean, &[]).await;
    assert!(report.summary.figures.iter().all(|f| f.met == Some(true)), "{:?}", report.summary.figures);

    let marked = report_of(&clean, &[("github", "1/eph-1")]).await;
    assert_eq!(figure(&marked, "reused_single_use_runners").value, Some(1.0), "the store's reused mark counts");

    let empty = build(&FleetAggregates::default(), NOW - 30 * DAY, NOW);
    assert_eq!(figure(&empty, "single_use_share").met, None);
}

#[tokio::test]
async fn the_page_escapes_what_a_ci_told_and_marks_each_verdict() {
    let mut jobs = history();
    jobs[1].runner_name = Some("<script>alert(1)</script>\"".into());
    jobs[1].tier = Some("<b>tier</b>".into());
    let page = render_report(&report_of(&jobs, &[]).await, Format::Html);
    assert!(!page.contains("<script>") && !page.contains("<b>tier"), "escaped");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;"));
    assert!(page.contains("default-src 'none'"), "the page may load nothing");
    assert!(page.contains("<td class=\"missed\">MISSED</td>"));
    assert!(!page.contains("http://") && !page.contains("https://"), "no address to fetch");
}

#[tokio::test]
async fn replays_and_ended_job_attempts_make_a_runner_suspicious() {
    use crate::fleet::RunnerRefusal;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("store.db").display())).await.unwrap();
    store.record_runner_jobs(history(), 365 * DAY).await.unwrap();
    let refusal = |runner: &str, reason| RunnerRefusal {
        issuer: "github".into(),
        runner_key: Some(runner.into()),
        reason,
        seen_at: NOW - DAY,
    };
    let refusals = [
        refusal("1/eph-1", "replayed"),
        refusal("1/eph-1", "replayed"),
        refusal("2/eph-2", "job_ended"),
        refusal("3/eph-3", "policy"),
        refusal("4/eph-4", "ci_unavailable"),
    ];
    store.record_runner_refusals(&refusals, 365 * DAY).await.unwrap();
    let report = read(&store, NOW - 30 * DAY, NOW, &RunnerFilter::default()).await.unwrap();
    let suspicious = figure(&report, "suspicious_attempt_runners");
    assert_eq!((suspicious.value, suspicious.met), (Some(2.0), Some(false)), "a policy refusal is not suspicious");
    let runner = |key: &str| report.runners.iter().find(|r| r.key.as_deref() == Some(key)).unwrap();
    assert_eq!(runner("1/eph-1").refused.get("replayed"), Some(&2));
    assert!(runner("2/eph-2").suspicious() && !runner("3/eph-3").suspicious());
    let table = render_list(&report, Format::Table);
    assert!(table.contains("replayed:2") && table.contains("ci_unavailable:1"), "{table}");
}

#[tokio::test]
async fn filters_and_a_limit_show_the_worst_runners_first_and_count_the_rest() {
    let report = report_of(&history(), &[]).await;
    assert_eq!(report.runners[0].key.as_deref(), Some("20/shared"), "the newest of those missing a target");
    let missing: Vec<(Option<&str>, &[&str])> =
        report.runners.iter().take(2).map(|r| (r.key.as_deref(), r.missed.as_slice())).collect();
    assert_eq!(missing, [(Some("20/shared"), &["multi_repository"][..]), (Some("8/reused"), &["reused"][..])]);
    assert!(report.runners[2..].iter().all(|r| r.missed.is_empty()), "the rest meet every target");

    let only = |filter: RunnerFilter| {
        let mut report = report.clone();
        report.filter(&filter);
        report
    };
    let worst = only(RunnerFilter { missing_target: true, ..RunnerFilter::default() });
    assert_eq!((worst.runners.len(), worst.runners_not_shown), (2, 10));
    let hosted = only(RunnerFilter { tier: Some("hosted".into()), ..RunnerFilter::default() });
    assert!(hosted.runners.iter().all(|r| r.tier.as_deref() == Some("hosted")) && hosted.runners.len() == 2);
    let self_hosted = only(RunnerFilter { self_hosted: true, limit: Some(3), ..RunnerFilter::default() });
    assert_eq!((self_hosted.runners.len(), self_hosted.runners_not_shown), (3, 9));
    assert!(self_hosted.runners.iter().all(RunnerRow::self_hosted));
    assert!(only(RunnerFilter { issuer: Some("gitlab".into()), ..RunnerFilter::default() }).runners.is_empty());
    let table = render_list(&self_hosted, Format::Table);
    assert!(table.contains("(9 more runners not shown)"), "{table}");
    let page = render_report(&self_hosted, Format::Html);
    assert!(page.contains("9 more runners not shown."), "the page counts the rest");
}

/// A store with the known history and 3,000 more runners, many of them missing a target.
async fn many_runners() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("store.db").display())).await.unwrap();
    let mut jobs = history();
    for n in 0..3000_i64 {
        let mut one = jobs[0].clone();
        (one.job_id, one.runner_key) = (format!("many-{n}"), Some(format!("{n}/many")));
        one.repository = format!("octo-org/repo-{}", n % 7);
        one.seen_at = NOW - (n % 29) * DAY - n;
        (one.single_use, one.tier) = (n % 5 != 0, Some(if n % 5 == 0 { "persistent" } else { "ephemeral" }.into()));
        jobs.push(one);
        if n % 11 == 0 {
            let mut again = jobs.last().unwrap().clone();
            (again.job_id, again.repository) = (format!("again-{n}"), "octo-org/other".into());
            jobs.push(again);
        }
    }
    store.record_runner_jobs(jobs, 365 * DAY).await.unwrap();
    (dir, store)
}

/// Filtered as the runners stream in, a limit holds only the worst few at a time, yet shows
/// and counts exactly what filtering the whole report would.
#[tokio::test]
async fn a_filter_applied_while_reading_shows_what_filtering_the_whole_report_does() {
    let (_dir, store) = many_runners().await;
    let whole = read(&store, NOW - 30 * DAY, NOW, &RunnerFilter::default()).await.unwrap();
    for filter in [
        RunnerFilter { limit: Some(5), ..RunnerFilter::default() },
        RunnerFilter { missing_target: true, limit: Some(40), ..RunnerFilter::default() },
        RunnerFilter { self_hosted: true, tier: Some("persistent".into()), ..RunnerFilter::default() },
        RunnerFilter { limit: Some(0), ..RunnerFilter::default() },
    ] {
        let mut expected = whole.clone();
        expected.filter(&filter);
        let read = read(&store, NOW - 30 * DAY, NOW, &filter).await.unwrap();
        assert_eq!(read, expected, "{filter:?}");
    }
    assert!(whole.runners.len() > 3000 && whole.runners[0].missed.len() == 2, "{:?}", whole.runners[0]);
}

/// The filter as `runners list` and `runners report` parse it from their arguments.
fn parsed(args: &[&str]) -> Result<RunnerFilter, clap::Error> {
    #[derive(clap::Parser)]
    struct Listing {
        #[command(flatten)]
        filter: RunnerFilter,
    }
    let args = std::iter::once("runners").chain(args.iter().copied());
    <Listing as clap::Parser>::try_parse_from(args).map(|listing| listing.filter.bounded())
}

/// Without `--limit` or `--all`, a listing shows the worst 500 runners and counts the rest: the
/// table, the JSON and the page stay the same size however large the fleet grows.
#[tokio::test]
async fn a_listing_shows_the_worst_500_unless_asked_for_all() {
    let (_dir, store) = many_runners().await;
    let since = NOW - 30 * DAY;
    let whole = read(&store, since, NOW, &parsed(&["--all"]).unwrap()).await.unwrap();
    assert_eq!(whole.runners_not_shown, 0);
    let runners = whole.runners.len();
    assert!(runners > 3000, "{runners}");

    let bounded = read(&store, since, NOW, &parsed(&[]).unwrap()).await.unwrap();
    assert_eq!((bounded.runners.len(), bounded.runners_not_shown), (SHOWN_RUNNERS, runners - SHOWN_RUNNERS));
    assert_eq!(bounded.runners[..], whole.runners[..SHOWN_RUNNERS], "the worst first, as in the whole list");
    assert_eq!(bounded.summary, whole.summary, "the figures stay the whole fleet's");
    let few = read(&store, since, NOW, &parsed(&["--limit", "20"]).unwrap()).await.unwrap();
    assert_eq!((few.runners.len(), few.runners_not_shown), (20, runners - 20));
    assert!(parsed(&["--limit", "20", "--all"]).is_err(), "a limit or all, not both");

    let page = render_report(&bounded, Format::Html);
    let rows = |page: &str| page.matches("<tr").count();
    assert!(rows(&page) < SHOWN_RUNNERS + 40, "{} rows", rows(&page));
    assert!(page.contains(&format!("{} more runners not shown.", runners - SHOWN_RUNNERS)));
    let every = render_report(&whole, Format::Html);
    assert!(rows(&every) > runners && page.len() * 5 < every.len(), "{} against {}", page.len(), every.len());
}
