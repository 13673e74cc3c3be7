//! Several brokers on one PostgreSQL: every guarantee holds across replicas.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ci_creds::store::LeaseState;
use serde_json::json;

use crate::support::broker::Broker;
use crate::support::postgres::Postgres;
use crate::support::proxy::Mode;
use crate::support::stack::Stack;
use crate::support::webhooks::{body, github_headers};
use crate::support::{fixture, github_token};

fn completion(job_id: u64) -> (Vec<(&'static str, String)>, Vec<u8>) {
    let mut completed = fixture("github-workflow-job-completed.json");
    completed["workflow_job"]["id"] = json!(job_id);
    let delivery = body(&completed);
    (github_headers(&delivery, &format!("delivery-{job_id}")), delivery)
}

fn job_token(stack: &Stack, job_id: u64) -> String {
    github_token(&stack.github, |claims| claims["check_run_id"] = json!(job_id.to_string()))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_exchanged_at_one_replica_is_a_replay_at_the_other() {
    let postgres = Postgres::start().await;
    let stack = Stack::start_on(&postgres).await;
    let b = stack.replica().await;
    let token = github_token(&stack.github, |_| {});
    let roles = json!({"roles": ["read-config"]});
    assert_eq!(stack.broker.exchange(&token, &roles).await.0, 200);
    let (status, answer) = b.exchange(&token, &roles).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("token_replayed")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_at_one_replica_revokes_what_the_other_minted() {
    let postgres = Postgres::start().await;
    let stack = Stack::start_on(&postgres).await;
    let b = stack.replica().await;
    let live = stack.accessors(&job_token(&stack, 7), &["deploy-prod"]).await;
    let (headers, delivery) = completion(7);
    let (status, answer) = b.post("/v1/webhooks/github", &headers, delivery).await;
    assert_eq!((status, answer["revoked"].as_u64()), (200, Some(1)));
    stack.until_revoked(&live, Duration::from_secs(5)).await;
    let (status, answer) = stack.broker.exchange(&job_token(&stack, 7), &json!({"roles": ["read-config"]})).await;
    assert_eq!((status, answer["error"].as_str()), (409, Some("job_ended")), "A knows what B heard");
}

#[tokio::test(flavor = "multi_thread")]
async fn many_jobs_ended_across_both_replicas_are_each_revoked_exactly_once() {
    const JOBS: u64 = 500;
    let postgres = Postgres::start().await;
    // 250 deliveries arrive at each replica at once. This test is about exactly-once across
    // replicas, not about shedding load (that is `limits.rs`), so the burst queues for a slot
    // however slow the machine is, instead of being answered 503 after 100 ms.
    let stack = Stack::start_on_with_config(&postgres, "[limits]\nin_flight_wait = \"60s\"\n").await;
    let b = stack.replica().await;
    for job in 0..JOBS {
        let replica = if job % 2 == 0 { &stack.broker } else { &b };
        let (status, answer) = replica.exchange(&job_token(&stack, job), &json!({"roles": ["read-config"]})).await;
        assert_eq!(status, 200, "{answer}");
    }
    let mut sends = tokio::task::JoinSet::new();
    for job in 0..JOBS {
        let url = if job % 2 == 0 { stack.broker.url.clone() } else { b.url.clone() };
        let (headers, delivery) = completion(job);
        sends.spawn(async move {
            let mut request = reqwest::Client::new().post(format!("{url}/v1/webhooks/github")).body(delivery);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request.send().await.map(|r| r.status().as_u16())
        });
    }
    while let Some(sent) = sends.join_next().await {
        assert_eq!(sent.unwrap().unwrap(), 200);
    }

    let store = stack.store().await;
    let started = Instant::now();
    while store.count_leases(LeaseState::Revoked).await.unwrap() < JOBS as i64 {
        assert!(started.elapsed() < Duration::from_secs(60), "revocations did not finish");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.count_leases(LeaseState::Revoking).await.unwrap(), 0, "none left revoking");
    let confirmations: Vec<String> = [stack.broker.logs(), b.logs()]
        .iter()
        .flat_map(|log| {
            log.lines().filter(|l| l.contains("revocation confirmed")).map(str::to_owned).collect::<Vec<_>>()
        })
        .collect();
    let leases: HashSet<&str> =
        confirmations.iter().filter_map(|l| l.split("lease_id=").nth(1)?.split_whitespace().next()).collect();
    assert_eq!((confirmations.len(), leases.len()), (JOBS as usize, JOBS as usize), "one backend revoke per lease");
    assert!(
        stack.broker.logs().contains("revocation confirmed") && b.logs().contains("revocation confirmed"),
        "both replicas worked the queue"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_holding_claims_is_taken_over_after_the_deadline() {
    let postgres = Postgres::start().await;
    let mut stack = Stack::start_on(&postgres).await;
    let live = stack.accessors(&job_token(&stack, 9), &["deploy-prod", "read-config"]).await;
    stack.vault_proxy.set(Mode::BlackHole);
    let (headers, delivery) = completion(9);
    assert_eq!(stack.broker.post("/v1/webhooks/github", &headers, delivery).await.0, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    stack.broker.stop();
    stack.vault_proxy.set(Mode::Forward);
    assert!(stack.bao.accessor_alive(&live[0]).await, "A died before revoking");

    let started = Instant::now();
    let _b: Broker = stack.replica().await;
    let took = stack.until_revoked(&live, Duration::from_secs(15)).await;
    assert!(started.elapsed() >= Duration::from_secs(2), "B waited for A's claims to lapse (3 s): {took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_answer_503_while_postgres_is_down_and_recover_by_themselves() {
    let mut postgres = Postgres::start().await;
    let stack = Stack::start_on(&postgres).await;
    let b = stack.replica().await;
    let roles = json!({"roles": ["read-config"]});
    assert_eq!(stack.broker.exchange(&job_token(&stack, 1), &roles).await.0, 200);

    postgres.kill();
    for (n, replica) in [&stack.broker, &b].into_iter().enumerate() {
        let (status, answer) = replica.exchange(&job_token(&stack, 10 + n as u64), &roles).await;
        assert_eq!((status, answer["error"].as_str()), (503, Some("store_unavailable")), "{answer}");
        let (headers, delivery) = completion(1);
        let (status, answer) = replica.post("/v1/webhooks/github", &headers, delivery).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (503, Some("store_unavailable")),
            "an end is never acknowledged unsaved"
        );
        let ready = replica.http().get(format!("{}/readyz", replica.url)).send().await.unwrap();
        assert_eq!(ready.status().as_u16(), 503);
    }

    postgres.start_server().await;
    for (n, replica) in [&stack.broker, &b].into_iter().enumerate() {
        let started = Instant::now();
        loop {
            let (status, _) = replica.exchange(&job_token(&stack, 20 + n as u64), &roles).await;
            if status == 200 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(15), "replica {n} did not recover: {status}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let (headers, delivery) = completion(1);
    assert_eq!(b.post("/v1/webhooks/github", &headers, delivery).await.0, 200, "the redelivered end is applied");
}

#[tokio::test(flavor = "multi_thread")]
async fn aws_jobs_of_one_role_ending_at_two_replicas_at_once_all_land_in_its_deny_list() {
    use crate::support::aws_stack::{AwsStack, Options};
    let postgres = Postgres::start().await;
    postgres.create_database("ci_creds").await;
    let store_url = Some(postgres.url_without_password("ci_creds"));
    let stack = AwsStack::start_with(Options { store_url, ..Options::default() }).await;
    let b = stack.replica().await;
    let jobs: Vec<String> = (1..=8).map(|i| format!("70{i}")).collect();
    for job in &jobs {
        stack.mint(job, "deploy-aws").await;
    }
    let ends = jobs.iter().enumerate().map(|(n, job)| {
        let replica = if n % 2 == 0 { &stack.broker } else { &b };
        let bearer = vec![("authorization", format!("Bearer {}", stack.token(job)))];
        async move { replica.post("/v1/jobs/self/revoke", &bearer, vec![]).await.0 }
    });
    assert!(futures_util::future::join_all(ends).await.iter().all(|status| *status == 200));
    for job in &jobs {
        stack.until_leases(job, LeaseState::Revoked, Duration::from_secs(20)).await;
    }
    let expected: Vec<String> = jobs.iter().map(|job| format!("github@{job}")).collect();
    assert_eq!(stack.denied("deploy-prod").await, expected, "no end lost between replicas");
}
