//! `ci-creds jobs list` and `ci-creds leases list`: what the store says about jobs and leases,
//! as a table for people or JSON for scripts. Reads the store only; needs no secrets.

use serde::Serialize;

use crate::store::{JobRecord, Lease, LeaseState, Store};
use crate::table::{table, timestamp};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
}

pub async fn jobs(store: &Store, limit: i64, format: Format) -> Result<String, crate::store::Error> {
    let jobs = store.jobs(limit).await?;
    Ok(match format {
        Format::Json => to_json(&jobs),
        Format::Table => table(
            &[
                "ISSUER",
                "JOB",
                "REPOSITORY",
                "STATE",
                "ENDED BY",
                "ENDED AT",
                "LEASES",
                "REVOKING",
                "RUNNER",
                "ADDRESS",
            ],
            jobs.iter().map(job_row).collect(),
        ),
    })
}

pub async fn leases(
    store: &Store,
    state: Option<LeaseState>,
    limit: i64,
    format: Format,
) -> Result<String, crate::store::Error> {
    let leases = store.leases(state, limit).await?;
    Ok(match format {
        Format::Json => to_json(&leases),
        Format::Table => table(
            &["LEASE", "ISSUER", "JOB", "ROLE", "BACKEND", "STATE", "EXPIRES AT", "ATTEMPTS", "LAST ERROR"],
            leases.iter().map(lease_row).collect(),
        ),
    })
}

fn job_row(job: &JobRecord) -> Vec<String> {
    vec![
        job.issuer.clone(),
        job.job_id.clone(),
        job.repository.clone().unwrap_or_default(),
        format!("{:?}", job.state).to_lowercase(),
        job.ended_by.clone().unwrap_or_default(),
        job.ended_at.map(timestamp).unwrap_or_default(),
        job.leases.to_string(),
        job.leases_revoking.to_string(),
        job.runner.as_ref().map(runner_cell).unwrap_or_default(),
        job.address.clone().unwrap_or_default(),
    ]
}

/// `name (id) via source`, e.g. `release-runner-5 (5) via ci_api`.
fn runner_cell(runner: &serde_json::Value) -> String {
    let field = |name: &str| runner.get(name).and_then(serde_json::Value::as_str).unwrap_or("");
    let named = match (field("name"), field("id")) {
        ("", id) => id.to_owned(),
        (name, "") => name.to_owned(),
        (name, id) => format!("{name} ({id})"),
    };
    format!("{named} via {}", field("source"))
}

fn lease_row(lease: &Lease) -> Vec<String> {
    vec![
        lease.id.clone(),
        lease.issuer.clone(),
        lease.job_id.clone(),
        lease.role.clone(),
        lease.backend.clone(),
        lease.state.to_string(),
        timestamp(lease.expires_at),
        lease.attempts.to_string(),
        lease.last_error.clone().unwrap_or_default(),
    ]
}

fn to_json<T: Serialize>(rows: &[T]) -> String {
    serde_json::to_string_pretty(rows).unwrap_or_else(|_| "[]".into())
}
