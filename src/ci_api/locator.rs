//! Where the CI's API answers for a job, taken from its verified token at exchange and kept in
//! the store, so the reconciler can ask about a job long after its token is gone.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::job::{CiKind, Job};

/// Everything but letters, digits, `-`, `_` and `~` is escaped in a path segment: `/` so a value
/// stays one segment, `.` so none is `..`.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ci", rename_all = "lowercase", deny_unknown_fields)]
pub enum JobLocator {
    /// `repository` is `owner/name`; `job_id` is the token's `check_run_id`.
    Github {
        repository: String,
        job_id: String,
    },
    Gitlab {
        project_id: String,
        job_id: String,
    },
    Buildkite {
        organization: String,
        pipeline: String,
        build_number: u64,
        job_id: String,
    },
}

impl JobLocator {
    /// The locator of a verified job, or why its token does not give one.
    pub fn of(job: &Job) -> Result<Self, &'static str> {
        let claim = |name: &str| job.claims.get(name).and_then(Value::as_str).filter(|v| !v.is_empty());
        match job.kind {
            Some(CiKind::Github) => match job.repository.split_once('/') {
                Some((owner, name)) if !owner.is_empty() && !name.is_empty() && !name.contains('/') => {
                    Ok(Self::Github { repository: job.repository.clone(), job_id: job.job_id.clone() })
                }
                _ => Err("`repository` is not owner/name"),
            },
            Some(CiKind::Gitlab) => {
                let project_id = job.repository_id.clone().ok_or("no `job_project_id` claim")?;
                Ok(Self::Gitlab { project_id, job_id: job.job_id.clone() })
            }
            Some(CiKind::Buildkite) => Ok(Self::Buildkite {
                organization: claim("organization_slug").ok_or("no `organization_slug` claim")?.to_owned(),
                pipeline: claim("pipeline_slug").ok_or("no `pipeline_slug` claim")?.to_owned(),
                build_number: job
                    .claims
                    .get("build_number")
                    .and_then(Value::as_u64)
                    .ok_or("no `build_number` claim")?,
                job_id: job.job_id.clone(),
            }),
            Some(CiKind::Circleci) | None => Err("this CI has no job API the broker asks"),
        }
    }

    pub fn kind(&self) -> CiKind {
        match self {
            Self::Github { .. } => CiKind::Github,
            Self::Gitlab { .. } => CiKind::Gitlab,
            Self::Buildkite { .. } => CiKind::Buildkite,
        }
    }

    /// The job status call's path below the API's URL, every segment escaped.
    pub fn path(&self) -> String {
        let e = |segment: &str| utf8_percent_encode(segment, SEGMENT).to_string();
        match self {
            Self::Github { repository, job_id } => {
                let (owner, name) = repository.split_once('/').unwrap_or((repository, ""));
                format!("/repos/{}/{}/actions/jobs/{}", e(owner), e(name), e(job_id))
            }
            Self::Gitlab { project_id, job_id } => format!("/projects/{}/jobs/{}", e(project_id), e(job_id)),
            Self::Buildkite { organization, pipeline, build_number, job_id } => format!(
                "/v2/organizations/{}/pipelines/{}/builds/{build_number}/jobs/{}",
                e(organization),
                e(pipeline),
                e(job_id)
            ),
        }
    }

    /// Where Buildkite describes the agent that ran this job (its tags, `meta_data`).
    pub fn agent_path(&self, agent_id: &str) -> Option<String> {
        let e = |segment: &str| utf8_percent_encode(segment, SEGMENT).to_string();
        match self {
            Self::Buildkite { organization, .. } => {
                Some(format!("/v2/organizations/{}/agents/{}", e(organization), e(agent_id)))
            }
            Self::Github { .. } | Self::Gitlab { .. } => None,
        }
    }

    /// As kept in the store.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(kind: CiKind, repository: &str, claims: Value) -> Job {
        let mut job = Job::new("ci", "9/1", repository);
        job.kind = Some(kind);
        job.repository_id = claims.get("job_project_id").and_then(Value::as_str).map(str::to_owned);
        job.claims = claims.as_object().cloned().unwrap_or_default();
        job
    }

    #[test]
    fn every_segment_of_the_path_is_escaped() {
        let github = JobLocator::of(&job(CiKind::Github, "octo-org/octo-repo", json!({}))).unwrap();
        assert_eq!(github.path(), "/repos/octo-org/octo-repo/actions/jobs/9%2F1");
        let gitlab = JobLocator::of(&job(CiKind::Gitlab, "g/p", json!({"job_project_id": "20"}))).unwrap();
        assert_eq!(gitlab.path(), "/projects/20/jobs/9%2F1");
        let claims = json!({"organization_slug": "acme", "pipeline_slug": "app/..", "build_number": 7});
        let buildkite = JobLocator::of(&job(CiKind::Buildkite, "acme/app", claims)).unwrap();
        assert_eq!(buildkite.path(), "/v2/organizations/acme/pipelines/app%2F%2E%2E/builds/7/jobs/9%2F1");
    }

    #[test]
    fn a_token_without_the_coordinates_gives_no_locator() {
        assert!(JobLocator::of(&job(CiKind::Github, "no-slash", json!({}))).is_err());
        assert!(JobLocator::of(&job(CiKind::Gitlab, "g/p", json!({}))).is_err());
        let string_number = json!({"organization_slug": "acme", "pipeline_slug": "app", "build_number": "7"});
        assert!(JobLocator::of(&job(CiKind::Buildkite, "acme/app", string_number)).is_err());
        assert!(JobLocator::of(&job(CiKind::Circleci, "o/p", json!({}))).is_err());
    }

    #[test]
    fn a_locator_reads_back_as_it_was_stored() {
        let locator = JobLocator::Buildkite {
            organization: "acme".into(),
            pipeline: "app".into(),
            build_number: 1,
            job_id: "j".into(),
        };
        assert_eq!(JobLocator::from_json(&locator.to_json()), Some(locator));
        assert_eq!(JobLocator::from_json(r#"{"ci":"github","repository":"a/b"}"#), None);
    }
}
