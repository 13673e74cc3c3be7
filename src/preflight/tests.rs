use super::{Finding, Report, Status, days_left};

fn report() -> Report {
    Report {
        findings: vec![
            Finding::ok("issuer github", "2 key(s) (RS256)"),
            Finding::warn("webhook gitlab", "short", "use a longer secret"),
        ],
    }
}

#[test]
fn a_line_per_item_with_the_fix_and_an_exit_code_that_only_a_failure_sets() {
    let mut report = report();
    assert_eq!(
        report.text(),
        "ok      issuer github: 2 key(s) (RS256)\nwarn    webhook gitlab: short — use a longer secret\n"
    );
    assert_eq!(report.exit_code(), 0, "warnings alone pass");
    report.findings.push(Finding::failed("vault", "token refused", "give it a valid token"));
    assert_eq!(report.exit_code(), 1);
    assert!(report.text().ends_with("failed  vault: token refused — give it a valid token\n"));
}

#[test]
fn json_is_an_array_of_item_status_detail_fix() {
    let json: serde_json::Value = serde_json::from_str(&report().json()).unwrap();
    assert_eq!(
        json,
        serde_json::json!([
            {"item": "issuer github", "status": "ok", "detail": "2 key(s) (RS256)", "fix": null},
            {"item": "webhook gitlab", "status": "warn", "detail": "short", "fix": "use a longer secret"},
        ])
    );
    assert_eq!(Status::Failed.as_str(), "failed");
}

#[test]
fn days_left_round_down_and_go_negative_once_past() {
    assert_eq!(days_left(1_000 + 5 * 86_400 + 10, 1_000), 5);
    assert_eq!(days_left(1_000 + 86_399, 1_000), 0);
    assert_eq!(days_left(1_000 - 1, 1_000), -1);
}
