//! Readiness sees the group commit stop: on SQLite, its task and its thread each hold a guard.

use super::Store;
use super::commit_queue::Running;

async fn sqlite_store(dir: &tempfile::TempDir) -> Store {
    Store::connect(&format!("sqlite://{}", dir.path().join("store.db").display())).await.unwrap()
}

#[test]
fn a_guard_dropped_by_a_panic_marks_the_commits_stopped() {
    let running = Running::default();
    let guard = running.guard();
    let thread = std::thread::spawn(move || {
        let _running = guard;
        panic!("the committing thread dies");
    });
    assert!(thread.join().is_err());
    assert!(running.stopped());
}

#[tokio::test]
async fn the_store_is_unready_once_its_commits_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    store.ping().await.expect("ready while the commits run");
    assert_eq!(store.group_commit.running_guards(), 2, "the task and the SQLite thread each hold one");

    drop(store.group_commit.running().guard());
    let error = store.ping().await.expect_err("unready once a guard is dropped");
    assert!(matches!(error, super::Error::Stopped), "{error}");
}
