use super::*;

const NOW: i64 = 1_800_000_000;

#[test]
fn adds_identities_bucketed_by_expiry_and_reads_its_own_document_back() {
    let mut list = DenyList::default();
    assert!(list.add("github@1", NOW + 900, NOW));
    assert!(list.add("github@2", NOW + 899, NOW), "same minute, same statement");
    assert!(!list.add("github@1", NOW + 900, NOW), "already denied");
    assert!(!list.add("github@3", NOW - 3600, NOW), "its sessions are long dead");
    let document = list.document();
    let doc: Value = serde_json::from_str(&document).unwrap();
    assert_eq!(doc["Statement"].as_array().unwrap().len(), 1, "{document}");
    assert_eq!(doc["Statement"][0]["Condition"]["StringEquals"]["aws:SourceIdentity"], json!(["github@1", "github@2"]));
    assert_eq!(doc["Statement"][0]["Effect"], "Deny");
    assert_eq!(DenyList::parse(&document).unwrap(), list);
}

#[test]
fn prunes_what_expired_and_keeps_what_did_not() {
    let mut list = DenyList::default();
    list.add("old", NOW + 60, NOW);
    list.add("new", NOW + 3600, NOW);
    assert!(!list.prune(NOW + 60), "within the grace");
    assert!(list.prune(NOW + 60 + PRUNE_GRACE_SECONDS + 60));
    assert_eq!(list.identities().collect::<Vec<_>>(), ["new"]);
    assert!(list.prune(NOW + 7200));
    assert!(list.is_empty());
}

#[test]
fn falls_back_to_a_cutoff_rounded_up_and_prunes_it_after_the_longest_session() {
    let mut list = DenyList::default();
    list.add("a", NOW + 900, NOW);
    let now = OffsetDateTime::from_unix_timestamp(NOW).unwrap() + time::Duration::milliseconds(1);
    list.fall_back(now);
    assert_eq!(list.identities().count(), 0);
    assert_eq!(list.cutoff(), Some(NOW + 1));
    let doc: Value = serde_json::from_str(&list.document()).unwrap();
    assert_eq!(
        doc["Statement"][0]["Condition"],
        json!({"DateLessThan": {"aws:TokenIssueTime": "2027-01-15T08:00:01Z"}})
    );
    assert_eq!(DenyList::parse(&list.document()).unwrap(), list);
    assert!(!list.prune(NOW + 12 * 3600));
    assert!(list.prune(NOW + 13 * 3600));
    assert!(list.is_empty());
}

#[test]
fn keeps_statements_it_did_not_write_and_merges_a_newer_copy() {
    let foreign =
        r#"{"Version":"2012-10-17","Statement":{"Sid":"Ops","Effect":"Deny","Action":"s3:*","Resource":"*"}}"#;
    let mut list = DenyList::parse(foreign).unwrap();
    assert!(!list.is_empty());
    let mut written = DenyList::default();
    written.add("github@9", NOW + 900, NOW);
    list.merge(&written);
    let doc: Value = serde_json::from_str(&list.document()).unwrap();
    assert_eq!(doc["Statement"].as_array().unwrap().len(), 2);
    assert_eq!(doc["Statement"][1]["Sid"], "Ops");
    assert_eq!(list.identities().collect::<Vec<_>>(), ["github@9"]);
}

#[test]
fn counts_size_as_iam_does() {
    assert_eq!(policy_size("{ \"a\" :\n\t1 }"), 7);
}
