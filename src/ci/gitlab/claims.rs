//! GitLab CI `id_tokens`: strings, except `runner_id`; booleans as "true"/"false". The job runs
//! in `job_project_*`; `project_*` is the pipeline's source, a fork for fork merge requests
//! (GitLab's ID token docs, `ci/secrets/id_token_authentication`; since 18.2.2, gitlab-org/gitlab
//! issues 561735 and 563038, merge request 258245).

use serde::Deserialize;
use serde_json::Value;

use crate::ci::CiKind;
use crate::ci::Issuer;
use crate::ci::claims::{ClaimsError, decode, full_ref, required, string_bool};
use crate::ci::{DangerousTrigger, FactSource, Job, Runner, RunnerKey, Sourced};

#[derive(Deserialize)]
struct Claims {
    job_id: Option<String>,
    job_project_path: Option<String>,
    job_project_id: Option<String>,
    project_path: Option<String>,
    namespace_path: Option<String>,
    namespace_id: Option<String>,
    #[serde(rename = "ref")]
    git_ref: Option<String>,
    ref_type: Option<String>,
    ref_path: Option<String>,
    ref_protected: Option<String>,
    environment: Option<String>,
    environment_protected: Option<String>,
    pipeline_source: Option<String>,
    pipeline_id: Option<String>,
    ci_config_ref_uri: Option<String>,
    runner_environment: Option<String>,
    runner_id: Option<u64>,
}

pub fn job(issuer: &Issuer<'_>, claims: &Value) -> Result<Job, ClaimsError> {
    let c: Claims = decode(claims)?;
    let repository = required(c.job_project_path, "job_project_path")?;
    let dangerous_trigger =
        c.project_path.filter(|source| *source != repository).map(|value| DangerousTrigger::ForeignClaim {
            claim: "project_path",
            value,
            why: "is not the job's own project (e.g. a fork's pipeline)",
        });
    let git_ref = c.ref_path.or_else(|| c.git_ref.as_deref().and_then(|name| full_ref(c.ref_type.as_deref(), name)));
    Ok(Job {
        kind: Some(CiKind::Gitlab),
        run_id: c.pipeline_id,
        repository_id: c.job_project_id,
        owner: c.namespace_path,
        owner_id: c.namespace_id,
        git_ref,
        ref_type: c.ref_type,
        ref_protected: string_bool(c.ref_protected.as_deref(), "ref_protected")?,
        environment: c.environment,
        environment_protected: string_bool(c.environment_protected.as_deref(), "environment_protected")?,
        event: c.pipeline_source,
        workflow_ref: c.ci_config_ref_uri,
        runner_environment: c.runner_environment,
        runner: Runner {
            id: c.runner_id.map(|id| Sourced::new(id.to_string(), FactSource::Token)),
            ..Runner::default()
        },
        // A runner id names a configuration that many autoscaled hosts may share; the manager
        // (`system_id`) is the host.
        runner_key_by: RunnerKey::Manager,
        dangerous_trigger,
        ..Job::new(issuer.name, required(c.job_id, "job_id")?, repository)
    })
}
