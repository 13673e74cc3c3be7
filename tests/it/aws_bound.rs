//! An AWS session bound to the job's address, minted against a real moto server: STS is asked
//! for the session with the bound session policy, and the session works. moto records the
//! session policy but does not evaluate `aws:SourceIp`, so no test here shows AWS refusing the
//! session from another address; the condition itself is checked in
//! `src/policy/tests/binding_aws.rs`.

use std::time::Duration;

use aws_sdk_iam::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
use ci_creds::backends::aws::AwsBackend;
use ci_creds::backends::{Backend, Credential, MintRequest};
use ci_creds::ci::Job;
use ci_creds::policy::AwsScope;
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use crate::support::moto::{ACCOUNT, Moto, REGION};

const ROLE: &str = "deploy";

async fn moto_with_role() -> Moto {
    let moto = Moto::start(&[]).await;
    let trust = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"AWS": format!("arn:aws:iam::{ACCOUNT}:root")},
        "Action": ["sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"]}]});
    moto.iam("testing", "testing")
        .create_role()
        .role_name(ROLE)
        .assume_role_policy_document(trust.to_string())
        .send()
        .await
        .expect("role created in moto");
    moto
}

fn backend(moto: &Moto, role_arn: &str) -> AwsBackend {
    let shared = aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(&moto.url)
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "testing", "testing", None, None, "test",
        )))
        .build();
    AwsBackend::with_shared_config(&shared, REGION, [role_arn]).expect("backend")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bound_session_carries_the_block_in_its_session_policy_and_still_works() {
    let moto = moto_with_role().await;
    let role_arn = format!("arn:aws:iam::{ACCOUNT}:role/{ROLE}");
    let aws = backend(&moto, &role_arn);
    let job =
        Job { issuer: "github".into(), job_id: "7".into(), repository: "octo-org/octo-repo".into(), ..Job::default() };
    let own = json!({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*"}]});
    let scope = AwsScope {
        role_arn: role_arn.clone(),
        session_policy: Some(own.to_string()),
        session_tags: Default::default(),
    };
    let minted = aws
        .mint(MintRequest {
            job: &job,
            role: "deploy-aws",
            scope: &scope,
            ttl: Duration::from_secs(900),
            bind: Some("127.0.0.5/32".parse().unwrap()),
        })
        .await
        .expect("minted");

    let assumed = moto.recorded("sts", "AssumedRole").await;
    let session = assumed.last().expect("moto recorded the session");
    let policy: Value = serde_json::from_str(session["policy"].as_str().expect("a session policy")).unwrap();
    assert_eq!(
        policy["Statement"],
        json!([
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*",
             "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.5/32"}}},
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*",
             "Condition": {"Bool": {"aws:ViaAWSService": "true"}}},
            {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*"}
        ])
    );

    let Credential::Aws { access_key_id, secret_access_key, session_token, .. } = &minted.credential else {
        panic!("not an AWS credential")
    };
    let sts =
        moto.sts(access_key_id.expose_secret(), secret_access_key.expose_secret(), Some(session_token.expose_secret()));
    let identity =
        sts.get_caller_identity().send().await.expect("the bound session works (moto does not evaluate aws:SourceIp)");
    assert!(identity.arn().unwrap_or_default().contains(":assumed-role/deploy/github@7"), "{:?}", identity.arn());
}
