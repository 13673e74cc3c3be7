//! `ci-creds get` and `ci-creds revoke` run as binaries inside a simulated Azure Pipelines job,
//! against the real broker and OpenBao. Azure DevOps is the loopback stand-in
//! (`support::azure_devops`): the pipeline's OIDC token request checks the job's access token and
//! signs a fresh token for the run each time; the build API and the run's timeline check the
//! broker's personal access token.

use reqwest::Method;

use crate::support::azure_devops::{AzureDevOps, JOB, ORG, RUN, Run, TimelineJob};
use crate::support::ci_job::{assert_no_secret, ci_creds, err, out};
use crate::support::free_port;
use crate::support::stack::Stack;
use crate::support::wait_until;

const FAST_RETRY: &str = "50ms";

const ROLES: &str = r#"  - name: azure-read
    backend: vault
    max_ttl: 5m
    vault: { policies: [read-config] }
    allow:
      - issuer: azure
        owner_id: "0ca3ddd9-f0b0-4635-a98c-5866526961b6"
        repository: octo-org/octo-repo
        ref: refs/heads/main
        claims: { prj_id: "271ef6f7-5998-4b0f-86fb-4b54d9129990", def_id: "12" }
"#;

/// A broker that pins the fixtures' organisation as issuer `azure` and asks its build API, with
/// run 4711 in progress.
async fn stack(azure: &AzureDevOps) -> Stack {
    azure.set_run(ORG, RUN, Run::InProgress);
    let config = format!("{}{}", azure.issuer_config("azure", ORG, ""), azure.api_config("azure", ORG, ""));
    Stack::start_with(&config, ROLES, azure.env()).await
}

/// A step of run 4711 with the access token mapped, pointed at `stack`'s broker.
fn step_env(azure: &AzureDevOps, stack: &Stack) -> Vec<(&'static str, String)> {
    let mut env = azure.job_env(ORG, RUN, Some(&azure.access_token));
    env.push(("CI_CREDS_BROKER", stack.broker.url.clone()));
    env
}

async fn vault_status(stack: &Stack, token: &str) -> u16 {
    stack.bao.request(reqwest::Method::GET, "secret/data/config/app", token, None).await.0
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_an_azure_pipelines_job_requests_the_token_and_sets_masked_variables_then_revokes() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure).await;
    let env = step_env(&azure, &stack);

    let output = ci_creds(&["get", "--role", "azure-read", "--format", "azure"], &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let stdout = out(&output);
    let vault_token = stdout
        .lines()
        .find_map(|l| l.strip_prefix("##vso[task.setvariable variable=VAULT_TOKEN;issecret=true]"))
        .unwrap_or_else(|| panic!("no VAULT_TOKEN command in {stdout}"))
        .to_owned();
    assert_eq!(
        stdout,
        format!(
            "##vso[task.setvariable variable=VAULT_ADDR]{}\n##vso[task.setvariable variable=VAULT_TOKEN;issecret=true]{vault_token}\n",
            stack.vault_proxy.address
        )
    );
    assert_eq!(vault_status(&stack, &vault_token).await, 200, "the variable's token works");

    let asked = azure.token_requests();
    assert_eq!(asked.len(), 1);
    let seen = &asked[0];
    assert_eq!((&seen.method, seen.status), (&Method::POST, 200));
    assert!(seen.target.ends_with("/oidctoken?api-version=7.1"), "no audience sent: {}", seen.target);
    assert_eq!(seen.headers["content-type"], "application/json");
    assert_eq!(&seen.body[..], b"{}");
    assert!(azure.build_calls(ORG, RUN) >= 1, "the broker asked whether the run goes on");
    let leases = stack.leases("azure", &RUN.to_string()).await;
    assert_eq!(leases.len(), 1, "bound to run {RUN}");

    // The template's final step: the same job, a fresh token, the run's credentials revoked.
    let revoked = ci_creds(&["revoke"], &env).await;
    assert_eq!(revoked.status.code(), Some(0), "{}", err(&revoked));
    assert_eq!(out(&revoked), format!("revoked 1 credential(s) of job {RUN}\n"));
    assert_eq!(azure.token_requests().len(), 2);
    wait_until("OpenBao refusing the revoked token", || async { vault_status(&stack, &vault_token).await == 403 })
        .await;

    let mut secrets = azure.issued();
    secrets.extend([vault_token, azure.access_token.clone(), azure.pat.clone()]);
    assert_no_secret(&output, &secrets);
    assert_no_secret(&revoked, &secrets);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_an_azure_pipelines_job_names_its_job_so_its_credentials_are_that_jobs() {
    let azure = AzureDevOps::start().await;
    let stack = stack(&azure).await;
    // Job `Compile` runs; its timeline record is the fixture's.
    azure.set_job(ORG, RUN, TimelineJob::new(JOB, "inProgress", Some("Azure Pipelines 1")));
    let mut env = step_env(&azure, &stack);
    // Azure Pipelines sets both in every step.
    env.push(("SYSTEM_JOBID", JOB.to_owned()));
    env.push(("SYSTEM_JOBATTEMPT", "1".to_owned()));

    let output = ci_creds(&["get", "--role", "azure-read", "--format", "azure"], &env).await;
    assert_eq!(output.status.code(), Some(0), "{}", err(&output));
    let job_id = format!("{RUN}/{JOB}/1");
    assert_eq!(stack.leases("azure", &job_id).await.len(), 1, "bound to the job within run {RUN}");
    assert!(stack.leases("azure", &RUN.to_string()).await.is_empty(), "not to the run");
    assert_eq!(azure.timeline_calls(ORG, RUN), 1, "the broker asked the run's timeline");

    let revoked = ci_creds(&["revoke"], &env).await;
    assert_eq!(revoked.status.code(), Some(0), "{}", err(&revoked));
    assert_eq!(out(&revoked), format!("revoked 1 credential(s) of job {job_id}\n"));

    // Variables that name no job stop the client before anything is asked.
    let mut wrong = env.clone();
    wrong.retain(|(name, _)| *name != "SYSTEM_JOBATTEMPT");
    wrong.push(("SYSTEM_JOBATTEMPT", "first".to_owned()));
    let output = ci_creds(&["get", "--role", "azure-read", "--format", "azure"], &wrong).await;
    assert_eq!(output.status.code(), Some(3), "{}", err(&output));
    assert!(err(&output).contains("$SYSTEM_JOBATTEMPT is not a whole number"), "{}", err(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_an_azure_pipelines_step_without_the_access_token_says_how_to_map_it() {
    let azure = AzureDevOps::start().await;
    let output = ci_creds(
        &["get", "--broker", "http://127.0.0.1:9", "--role", "azure-read", "--format", "azure"],
        &azure.job_env(ORG, RUN, None),
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", err(&output));
    assert_eq!(out(&output), "");
    let stderr = err(&output);
    assert!(stderr.contains("$SYSTEM_OIDCREQUESTURI is set but $SYSTEM_ACCESSTOKEN is not"), "{stderr}");
    assert!(stderr.contains("`env: SYSTEM_ACCESSTOKEN: $(System.AccessToken)`"), "{stderr}");
    assert!(azure.requests().is_empty(), "nothing asked without the access token");
}

#[tokio::test(flavor = "multi_thread")]
async fn client_with_a_wrong_azure_access_token_exits_3_without_printing_it() {
    let azure = AzureDevOps::start().await;
    let wrong = "not-this-jobs-access-token";
    let output = ci_creds(
        &["get", "--broker", "http://127.0.0.1:9", "--role", "azure-read"],
        &azure.job_env(ORG, RUN, Some(wrong)),
    )
    .await;
    assert_eq!(output.status.code(), Some(3), "{}", err(&output));
    let stderr = err(&output);
    assert!(stderr.contains("Azure Pipelines' OIDC token request: answered HTTP 401"), "{stderr}");
    let asked = azure.token_requests();
    assert_eq!((asked.len(), asked[0].status), (1, 401));
    assert_eq!(asked[0].headers["authorization"], format!("Bearer {wrong}").as_str());
    assert!(azure.issued().is_empty());
    assert_no_secret(&output, &[wrong.to_owned()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_in_azure_pipelines_retries_an_unreachable_broker_each_time_with_a_fresh_token() {
    let azure = AzureDevOps::start().await;
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let output = ci_creds(
        &["get", "--broker", &nowhere, "--role", "azure-read", "--format", "azure", "--retry-delay", FAST_RETRY],
        &azure.job_env(ORG, RUN, Some(&azure.access_token)),
    )
    .await;
    assert_eq!(output.status.code(), Some(5), "{}", err(&output));
    let issued = azure.issued();
    assert_eq!(issued.len(), 4, "the first attempt and 3 retries");
    assert!(issued.windows(2).all(|w| w[0] != w[1]), "each a fresh token");
    assert_eq!(err(&output).matches("with a fresh CI token (attempt").count(), 3, "{}", err(&output));
    let mut secrets = issued;
    secrets.push(azure.access_token.clone());
    assert_no_secret(&output, &secrets);
}
