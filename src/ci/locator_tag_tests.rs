//! Every CI with a job API: its locator is kept in the store tagged with the CI's name. Each CI's
//! own locator tests (its path, the coordinates its token must give) are in its folder.

use serde_json::json;

use super::JobLocator;
use crate::ci::CiKind;
use crate::ci::test_support::locator_job as job;

#[test]
fn each_ci_s_locator_is_tagged_with_the_ci_s_name() {
    let claims = json!({
        "job_project_id": "20",
        "organization_slug": "acme",
        "pipeline_slug": "app",
        "build_number": 7,
        "iss": "https://jenkins.example.com/oidc",
        "sub": "https://jenkins.example.com/job/octo-org/job/octo-repo/",
        "prj_id": "271ef6f7",
    });
    for kind in CiKind::ALL.into_iter().filter(|kind| kind.ci().api.is_some()) {
        let mut job = job(kind, "octo-org/octo-repo", claims.clone());
        job.run_id = Some("7".into());
        // Jenkins' mapping names the job by the items of its URL.
        job.job_name = (kind == CiKind::Jenkins).then(|| "octo-org/octo-repo".into());
        let locator = JobLocator::of(&job).unwrap();
        assert_eq!(locator.kind(), kind);
        assert_eq!(serde_json::to_value(&locator).unwrap()["ci"], kind.name());
    }
}
