//! A serving broker watches the read credentials of each CI API it asks: where the CI tells their
//! expiry, it is a metric, and the last 14 days are warned of in the log.

use std::time::Duration;

use time::OffsetDateTime;
use time::macros::format_description;

use crate::support::github_api::GithubApi;
use crate::support::stack::Stack;

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_access_token_s_expiry_is_a_metric_and_its_last_days_a_warning() {
    let api = GithubApi::start().await;
    let expires =
        OffsetDateTime::now_utc().replace_nanosecond(0).unwrap() + time::Duration::days(9) + time::Duration::hours(12);
    let header = expires.format(format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC")).unwrap();
    api.set_personal_token("github_pat_nine_days_and_a_half", Some(header));
    let config = format!(
        "[lifecycle]\nci_credentials_interval = \"1s\"\n[ci_api.github]\napi_url = \"{}\"\ntoken_env = \"TEST_CI_API_PAT\"\n",
        api.url
    );
    let stack =
        Stack::start_with(&config, "", vec![("TEST_CI_API_PAT", "github_pat_nine_days_and_a_half".to_owned())]).await;

    let mut gauge = None;
    for _ in 0..100 {
        let (_, metrics) = stack.broker.get_text("/metrics").await;
        gauge = metrics.lines().find_map(|line| {
            line.strip_prefix("ci_creds_ci_api_credentials_expiry_timestamp_seconds{issuer=\"github\"} ")
                .map(str::to_owned)
        });
        if gauge.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let gauge: f64 = gauge.expect("no expiry gauge for the github issuer's API").parse().unwrap();
    assert_eq!(gauge, expires.unix_timestamp() as f64, "the expiry GitHub's header told");
    let logs = stack.broker.logs();
    let warning = logs.lines().find(|line| line.contains("expire soon")).expect("no warning in the log");
    assert!(warning.contains("days_left=9") && warning.contains("issuer=github"), "{warning}");
    assert!(!logs.contains("github_pat_nine_days_and_a_half"), "the token is never logged");
}
