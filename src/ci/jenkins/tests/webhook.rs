//! The Notification plugin's deliveries: which end a build, and which are refused.

use http::{HeaderMap, HeaderValue};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::ci::CiKind;
use crate::ci::test_support::{basic_auth, fixture};
use crate::ci::{Verdict, WebhookError};

fn notification(credentials: Option<&str>, body: &[u8]) -> Result<Verdict, WebhookError> {
    CiKind::Jenkins.ci().read_webhook(&basic_auth(credentials), body, &SecretString::from("ci-creds:s3cret"))
}

#[test]
fn a_notification_with_the_configured_credentials_ends_its_build_and_any_other_is_refused() {
    let completed = fixture("jenkins-notification-completed.json");
    let ended = notification(Some("ci-creds:s3cret"), &completed).unwrap();
    assert_eq!(
        ended,
        Verdict::End {
            job_id: "octo-org/octo-repo/main#42".into(),
            delivery_id: None,
            runner: None,
            jobs_within: false
        }
    );
    for wrong in [Some("ci-creds:s3cre"), Some("ci-creds:s3cret "), Some("other:s3cret"), Some(""), None] {
        assert_eq!(notification(wrong, &completed), Err(WebhookError::InvalidSignature), "{wrong:?}");
    }
    let mut bearer = HeaderMap::new();
    bearer.insert("authorization", HeaderValue::from_static("Bearer ci-creds:s3cret"));
    let refused = CiKind::Jenkins.ci().read_webhook(&bearer, &completed, &SecretString::from("ci-creds:s3cret"));
    assert_eq!(refused, Err(WebhookError::InvalidSignature));
}

#[test]
fn only_completed_and_finalized_end_a_build_and_a_delivery_about_no_job_is_refused() {
    let mut delivery: Value = serde_json::from_slice(&fixture("jenkins-notification-completed.json")).unwrap();
    for (phase, ends) in [("QUEUED", false), ("STARTED", false), ("COMPLETED", true), ("FINALIZED", true)] {
        delivery["build"]["phase"] = json!(phase);
        let verdict = notification(Some("ci-creds:s3cret"), &serde_json::to_vec(&delivery).unwrap()).unwrap();
        assert_eq!(matches!(verdict, Verdict::End { .. }), ends, "{phase}");
        assert_eq!(matches!(verdict, Verdict::Ignore(_)), !ends, "{phase}");
    }
    for (field, value) in [("url", json!("job/../job/x/")), ("url", json!("https://jenkins.example.com/"))] {
        let mut hostile = delivery.clone();
        hostile[field] = value;
        let refused = notification(Some("ci-creds:s3cret"), &serde_json::to_vec(&hostile).unwrap());
        assert!(matches!(refused, Err(WebhookError::InvalidRequest(_))), "{field}");
    }
    let mut other_build = delivery.clone();
    other_build["build"]["url"] = json!("job/octo-org/job/octo-repo/job/main/41/");
    let refused = notification(Some("ci-creds:s3cret"), &serde_json::to_vec(&other_build).unwrap());
    assert!(matches!(refused, Err(WebhookError::InvalidRequest(_))));
}
