//! The audit trail's hash chain: what the broker writes verifies, and each way of tampering with
//! the file (an edited line, a removed line, a swapped pair) is reported by `ci-creds audit
//! verify` at the first line where the chain breaks.

use std::path::Path;
use std::process::Command;

use ci_creds::audit::{Audit, AuditConfig, Event, GENESIS, JobRef, line_hash, verify};
use ci_creds::backends::RevokeHandle;

fn write_events(path: &Path, count: usize) {
    let audit = Audit::open(&AuditConfig { file: Some(path.to_owned()), stdout: false }).expect("audit file opens");
    let handle = RevokeHandle::Vault { accessor: "accessor-1".into() };
    for i in 0..count {
        let job_id = format!("job-{i}");
        audit.record(&Event::RevocationConfirmed {
            job: JobRef { issuer: "github", job_id: &job_id },
            role: "deploy-prod",
            lease_id: "lease-1",
            backend: "vault",
            handle: &handle,
            attempts: 1,
            exposure_ms: Some(12),
        });
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

/// Runs `ci-creds audit verify FILE`; returns (exit code, stdout).
fn cli_verify(path: &Path) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ci-creds")).args(["audit", "verify"]).arg(path).output().unwrap();
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn an_untouched_chain_verifies_and_names_its_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 4);
    let all = lines(&path);
    let first: serde_json::Value = serde_json::from_str(&all[0]).unwrap();
    assert_eq!(first["prev"], GENESIS);
    assert_eq!(first["seq"], 1);
    assert_eq!(first["event"], "revocation.confirmed");
    let head = line_hash(all[3].as_bytes());
    let (code, out) = cli_verify(&path);
    assert_eq!((code, out.trim()), (0, format!("ok: 4 events; head {head}").as_str()));
}

#[test]
fn a_restarted_broker_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 2);
    write_events(&path, 2);
    let verified = verify(&std::fs::read(&path).unwrap(), None).expect("one unbroken chain");
    assert_eq!(verified.events, 4);
    let last: serde_json::Value = serde_json::from_str(&lines(&path)[3]).unwrap();
    assert_eq!(last["seq"], 4);
}

#[test]
fn detects_an_edited_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 5);
    let mut all = lines(&path);
    all[2] = all[2].replace("job-2", "job-9");
    write_lines(&path, &all);
    let (code, out) = cli_verify(&path);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("line 4: `prev` is not the hash of line 3: line 3 was edited"), "{out}");
}

#[test]
fn detects_a_removed_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 5);
    let mut all = lines(&path);
    all.remove(2);
    write_lines(&path, &all);
    let (code, out) = cli_verify(&path);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("line 3: `prev` is not the hash of line 2, and seq jumps from 2 to 4: 1 event(s) removed"),
        "{out}"
    );
}

#[test]
fn detects_a_removed_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 3);
    let all = lines(&path);
    write_lines(&path, &all[1..]);
    let (code, out) = cli_verify(&path);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("line 1: `prev` is not the chain's start"), "{out}");
}

#[test]
fn detects_a_reordered_pair() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 5);
    let mut all = lines(&path);
    all.swap(1, 2);
    write_lines(&path, &all);
    let (code, out) = cli_verify(&path);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("line 2: `prev` is not the hash of line 1, and seq jumps from 1 to 3"), "{out}");
}

#[test]
fn a_rotated_file_verifies_against_the_previous_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 4);
    let all = lines(&path);
    let head_of_first = line_hash(all[1].as_bytes());
    let rotated = all[2..].iter().map(|l| format!("{l}\n")).collect::<String>();
    assert!(verify(rotated.as_bytes(), None).is_err(), "a continuation is not a chain's start");
    assert_eq!(verify(rotated.as_bytes(), Some(&head_of_first)).expect("continues").events, 2);
}

#[test]
fn a_torn_last_write_is_reported_and_the_chain_goes_on_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_events(&path, 2);
    let mut contents = std::fs::read(&path).unwrap();
    contents.extend_from_slice(b"{\"seq\":3,\"ti");
    std::fs::write(&path, contents).unwrap();
    write_events(&path, 1);
    let all = lines(&path);
    assert_eq!(all.len(), 4, "the torn fragment stands on its own line");
    let broken = verify(&std::fs::read(&path).unwrap(), None).unwrap_err();
    assert_eq!(broken.line, 3);
    let after_fragment: serde_json::Value = serde_json::from_str(&all[3]).unwrap();
    assert_eq!(after_fragment["prev"], line_hash(all[1].as_bytes()), "chained to the last whole event");
}
