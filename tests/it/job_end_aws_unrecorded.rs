//! An STS session the broker minted but whose handle it never recorded (killed between
//! AssumeRole's answer and the lease's activation) is denied at its job's end all the same: the
//! handle is the role's ARN and the job's source identity, both known without STS's answer.

use std::time::Duration;

use ci_creds::store::LeaseState;
use sqlx::Connection;

use crate::support::aws_stack::AwsStack;

const JOB: &str = "289782451";

#[tokio::test(flavor = "multi_thread")]
async fn a_session_whose_handle_was_never_recorded_is_denied_at_the_jobs_end() {
    let mut stack = AwsStack::start().await;
    stack.mint(JOB, "deploy-aws").await;
    stack.broker.stop();
    // The store as a kill after STS answered and before the activation was written leaves it.
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}", stack.broker.database().display());
    let mut database = sqlx::AnyConnection::connect(&url).await.unwrap();
    let changed = sqlx::query("UPDATE leases SET handle = NULL, state = 'pending' WHERE job_id = $1")
        .bind(JOB)
        .execute(&mut database)
        .await
        .unwrap()
        .rows_affected();
    assert_eq!(changed, 1);
    database.close().await.unwrap();

    stack.broker.spawn().await;
    let leases = stack.leases(JOB).await;
    assert_eq!(leases[0].state, LeaseState::Active, "settled at start: {leases:?}");
    assert_eq!(stack.end(JOB).await["revoked"], 1);
    stack.until_leases(JOB, LeaseState::Revoked, Duration::from_secs(10)).await;
    assert_eq!(stack.denied("deploy-prod").await, vec![format!("github@{JOB}")]);
}
