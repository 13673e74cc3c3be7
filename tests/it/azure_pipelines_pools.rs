//! A run-bound Azure Pipelines exchange (no `job` named) against the loopback Azure DevOps: the
//! build's `queue.pool` is the run's default pool, so it is judged the job's only while every job
//! record of the run's timeline is on the run's queue; a run being cancelled gets nothing; and with
//! a PAT Azure DevOps no longer takes, no exchange gets anything.

use crate::azure_pipelines::{ROLES, events, exchange, exchange_job, refusal};
use crate::support::azure_devops::{AzureDevOps, JOB, ORG, PAT_ENV, RUN, RUN_QUEUE, Run, SIBLING, TimelineJob};
use crate::support::stack::Stack;

/// A persistent self-hosted agent's queue, other than the run's.
const SELF_HOSTED_QUEUE: u64 = 4800;

/// Keeps credentials off self-hosted agents: only Microsoft-hosted runners are in the tier.
const TIERS: &str = "  - name: azure-hosted\n    match: { issuer: azure, runner_environment: microsoft-hosted }\n";
const HOSTED_ROLE: &str = r#"  - name: azure-hosted-only
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - { issuer: azure, runner_tier: azure-hosted }
"#;

async fn stack(azure: &AzureDevOps) -> Stack {
    let config = format!("{}{}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    Stack::start_with_policy(None, &config, TIERS, &format!("{ROLES}{HOSTED_ROLE}"), azure.env()).await
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_run_bound_exchange_is_not_judged_on_the_run_s_default_pool() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure).await;
    // The run's default pool is Microsoft's hosted one (the fixtures' `queue`); one job runs there.
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-hosted-only"]).await;
    assert_eq!(status, 200, "every job on the run's queue: the run's pool is theirs: {answer}");
    assert_eq!(azure.timeline_calls(ORG, RUN), 1, "the timeline was asked: {:?}", azure.requests());

    // Another run: one job on the hosted queue, another on a persistent self-hosted agent's. A
    // step of the second asks without naming its job: the run's default pool is not its pool.
    let run = 4790;
    azure.set_run(ORG, run, Run::InProgress);
    azure.set_job(ORG, run, TimelineJob::new(JOB, "completed", Some("Azure Pipelines 1")));
    azure.set_job(
        ORG,
        run,
        TimelineJob {
            queue_id: Some(SELF_HOSTED_QUEUE),
            ..TimelineJob::new(SIBLING, "inProgress", Some("build-box-1"))
        },
    );
    let (status, answer) = exchange(&stack, &azure.token(ORG, run, |_| {}), &["azure-hosted-only"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    let reasons = answer["denied"][0]["reasons"].to_string();
    assert!(reasons.contains("runner_tier"), "the denial names the fact: {answer}");
    assert!(
        reasons.contains(&format!("job {SIBLING} is on queue {SELF_HOSTED_QUEUE}, not the run's queue {RUN_QUEUE}")),
        "and why it is unknown: {answer}"
    );
    let refused = events(&stack, "exchange.refused");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0]["job"]["runner_environment"].is_null(), "no environment judged: {}", refused[0]);

    // A job record without a queue (an agentless job, one not yet queued) counts as elsewhere.
    let agentless = 4791;
    azure.set_run(ORG, agentless, Run::InProgress);
    azure.set_job(ORG, agentless, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    azure.set_job(ORG, agentless, TimelineJob { queue_id: None, ..TimelineJob::new(SIBLING, "pending", None) });
    let (status, answer) = exchange(&stack, &azure.token(ORG, agentless, |_| {}), &["azure-hosted-only"]).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");
    assert!(answer["denied"][0]["reasons"].to_string().contains("is on no queue"), "{answer}");

    // The job that names itself is judged on its own record's queue, as before: the hosted one.
    let token = azure.token(ORG, run, |_| {});
    azure.set_job(ORG, run, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = exchange_job(&stack, &token, &["azure-hosted-only"], JOB, 1).await;
    assert_eq!(status, 200, "{answer}");
    let token = azure.token(ORG, run, |_| {});
    let (status, answer) = exchange_job(&stack, &token, &["azure-hosted-only"], SIBLING, 1).await;
    assert_eq!((status, refusal(&answer).0), (403, Some("access_denied")), "{answer}");

    // A rule needing no runner fact still grants the run.
    let (status, answer) = exchange(&stack, &azure.token(ORG, run, |_| {}), &["azure-read"]).await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_run_being_cancelled_gets_nothing() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure).await;
    azure.set_run(ORG, RUN, Run::Status("cancelling"));
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    // Nor does a job whose record still shows it running.
    let (status, answer) = exchange_job(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"], JOB, 1).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    assert!(stack.leases("azure", "4711").await.is_empty(), "no lease was written");
    assert!(events(&stack, "exchange.granted").is_empty());
    // Once cancelled, the run has ended.
    azure.set_run(ORG, RUN, Run::Completed);
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (409, Some("job_ended")), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_pipelines_expired_pat_fails_every_exchange() {
    let azure = AzureDevOps::start().await;
    let config = format!("{}{}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    // The PAT the broker holds is no longer the one Azure DevOps takes (expired, revoked).
    let env: Vec<(&'static str, String)> = azure
        .env()
        .into_iter()
        .map(|(name, value)| if name == PAT_ENV { (name, format!("{value}-expired")) } else { (name, value) })
        .collect();
    let stack = Stack::start_with_policy(None, &config, TIERS, &format!("{ROLES}{HOSTED_ROLE}"), env).await;
    azure.set_run(ORG, RUN, Run::InProgress);
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let (status, answer) = exchange(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"]).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    let (status, answer) = exchange_job(&stack, &azure.token(ORG, RUN, |_| {}), &["azure-read"], JOB, 1).await;
    assert_eq!((status, refusal(&answer).0), (503, Some("ci_unavailable")), "{answer}");
    let build = azure.build_path(ORG, RUN);
    let answered: Vec<u16> =
        azure.requests().into_iter().filter(|seen| seen.target == build).map(|seen| seen.status).collect();
    assert!(answered.len() >= 2 && answered.iter().all(|status| *status == 401), "refused PAT: {answered:?}");
    assert!(stack.leases("azure", "4711").await.is_empty(), "no lease was written");
}
