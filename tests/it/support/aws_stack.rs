//! The AWS end-to-end stack: moto (STS and IAM) behind a proxy tests can cut, the target roles
//! created in it, a GitHub-shaped issuer, and the broker with an `[aws]` section.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ci_creds::dev::DevIssuer;
use ci_creds::store::{Lease, LeaseState, Store};
use serde_json::{Value, json};

use super::broker::{Broker, STORE_PASSWORD, Setup};
use super::moto::{ACCOUNT, Moto, REGION};
use super::proxy::Proxy;
use super::{github_token, start_issuer};

pub const DENY_POLICY: &str = "ci-creds-revoked";

pub const POLICY: &str = r#"
roles:
  - name: deploy-aws
    backend: aws
    max_ttl: 1h
    aws:
      role_arn: arn:aws:iam::123456789012:role/deploy-prod
      session_policy: { Version: "2012-10-17", Statement: [ { Effect: Allow, Action: "s3:GetObject", Resource: "*" } ] }
      session_tags: { team: web }
    allow:
      - issuer: github
        repository_id: "74"
  - name: budget-aws
    backend: aws
    max_ttl: 15m
    aws:
      role_arn: arn:aws:iam::123456789012:role/ci/budget
    allow:
      - issuer: github
        repository_id: "74"
"#;

/// The IAM roles `POLICY` names: (path, name).
pub const ROLES: [(&str, &str); 2] = [("/", "deploy-prod"), ("/ci/", "budget")];

const EXTRA_CONFIG: &str = r#"
[webhooks.github]
issuer = "github"
secret_env = "TEST_GITHUB_WEBHOOK_SECRET"

[lifecycle]
sweep_interval = "1s"
"#;

#[derive(Default)]
pub struct Options {
    /// Inline policies put on roles before the broker starts: (role, policy name, document).
    pub seed: Vec<(&'static str, &'static str, String)>,
    /// moto enforces IAM, and the broker runs as an IAM user with no permission at all.
    pub broker_without_permissions: bool,
    /// A PostgreSQL URL (without password) for replicas to share; SQLite when `None`.
    pub store_url: Option<String>,
}

pub struct AwsStack {
    pub moto: Moto,
    /// Between the broker and moto: records what the broker asked, and can be cut.
    pub aws_proxy: Proxy,
    pub github: Arc<DevIssuer>,
    pub broker: Broker,
    /// What the broker was started with, to start replicas of it.
    extra_config: String,
    env: Vec<(&'static str, String)>,
    store_url: Option<String>,
}

fn setup<'a>(issuer: &'a str, extra: &'a str, store_url: Option<&'a str>, env: Vec<(&'a str, String)>) -> Setup<'a> {
    Setup {
        issuers: vec![("github", "github", issuer)],
        // No role uses Vault here; the broker never calls this address.
        vault_address: "http://127.0.0.1:9",
        policy: POLICY,
        extra_config: extra,
        store_url,
        env,
    }
}

impl AwsStack {
    pub async fn start() -> Self {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> Self {
        // With enforcement, moto lets the first N calls through unauthenticated: exactly setup's.
        let setup_calls = ROLES.len() + options.seed.len() + 2;
        let moto_env = if options.broker_without_permissions {
            vec![("INITIAL_NO_AUTH_ACTION_COUNT", setup_calls.to_string())]
        } else {
            Vec::new()
        };
        let moto = Moto::start(&moto_env).await;
        let iam = moto.iam("testing", "testing");
        let trust = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Principal": {"AWS": format!("arn:aws:iam::{ACCOUNT}:root")},
            "Action": ["sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"]}]});
        for (path, name) in ROLES {
            iam.create_role()
                .path(path)
                .role_name(name)
                .assume_role_policy_document(trust.to_string())
                .send()
                .await
                .expect("role created in moto");
        }
        for (role, name, document) in &options.seed {
            iam.put_role_policy().role_name(*role).policy_name(*name).policy_document(document).send().await.unwrap();
        }
        let (key, secret) = if options.broker_without_permissions {
            iam.create_user().user_name("ci-creds-broker").send().await.unwrap();
            let key = iam.create_access_key().user_name("ci-creds-broker").send().await.unwrap();
            let key = key.access_key.expect("access key");
            (key.access_key_id, key.secret_access_key)
        } else {
            ("testing".to_owned(), "testing".to_owned())
        };
        let aws_proxy = Proxy::start(&moto.url).await;
        let github = start_issuer().await;
        let extra = format!(
            "{EXTRA_CONFIG}\n[aws]\nregion = \"{REGION}\"\nendpoint_url = \"{}\"\ntimeout_seconds = 3\n",
            aws_proxy.address
        );
        let env = vec![
            ("AWS_ACCESS_KEY_ID", key),
            ("AWS_SECRET_ACCESS_KEY", secret),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
            ("AWS_CONFIG_FILE", "/nonexistent/aws-config".to_owned()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials".to_owned()),
        ];
        let broker = Broker::start(&setup(github.url(), &extra, options.store_url.as_deref(), env.clone())).await;
        Self { moto, aws_proxy, github, broker, extra_config: extra, env, store_url: options.store_url }
    }

    /// Another broker on the same config and store: a second replica.
    pub async fn replica(&self) -> Broker {
        Broker::start(&setup(self.github.url(), &self.extra_config, self.store_url.as_deref(), self.env.clone())).await
    }

    pub fn iam(&self) -> aws_sdk_iam::Client {
        self.moto.iam("testing", "testing")
    }

    /// A fresh token of GitHub job `job_id`.
    pub fn token(&self, job_id: &str) -> String {
        github_token(&self.github, |claims| claims["check_run_id"] = json!(job_id))
    }

    /// Exchanges a fresh token of `job_id` for `role`; returns the credential.
    pub async fn mint(&self, job_id: &str, role: &str) -> Value {
        let (status, answer) = self.broker.exchange(&self.token(job_id), &json!({ "roles": [role] })).await;
        assert_eq!(status, 200, "{answer}");
        answer["credentials"][0].clone()
    }

    /// The job ends itself, as `ci-creds revoke` does.
    pub async fn end(&self, job_id: &str) -> Value {
        let bearer = vec![("authorization", format!("Bearer {}", self.token(job_id)))];
        let (status, answer) = self.broker.post("/v1/jobs/self/revoke", &bearer, vec![]).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }

    /// The role's deny list as IAM holds it, decoded; `None` when there is none.
    pub async fn deny_policy(&self, role: &str) -> Option<Value> {
        deny_policy(&self.iam(), role).await
    }

    /// The source identities the role's deny list names.
    pub async fn denied(&self, role: &str) -> Vec<String> {
        let Some(policy) = self.deny_policy(role).await else { return Vec::new() };
        let mut identities = Vec::new();
        for statement in policy["Statement"].as_array().into_iter().flatten() {
            match &statement["Condition"]["StringEquals"]["aws:SourceIdentity"] {
                Value::Array(ids) => identities.extend(ids.iter().filter_map(|id| id.as_str().map(str::to_owned))),
                Value::String(id) => identities.push(id.clone()),
                _ => {}
            }
        }
        identities.sort();
        identities
    }

    pub async fn leases(&self, job_id: &str) -> Vec<Lease> {
        let url = match &self.store_url {
            Some(url) => url.replacen("postgres://postgres@", &format!("postgres://postgres:{STORE_PASSWORD}@"), 1),
            None => format!("sqlite://{}", self.broker.database().display()),
        };
        let store = Store::connect(&url).await.expect("broker database opens");
        store.leases_of_job("github", job_id).await.expect("leases readable")
    }

    /// Waits until every lease of `job_id` is in `state`.
    pub async fn until_leases(&self, job_id: &str, state: LeaseState, limit: Duration) -> Vec<Lease> {
        let started = Instant::now();
        loop {
            let leases = self.leases(job_id).await;
            if !leases.is_empty() && leases.iter().all(|l| l.state == state) {
                return leases;
            }
            assert!(started.elapsed() < limit, "leases of {job_id} not {state} after {limit:?}: {leases:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

pub async fn deny_policy(iam: &aws_sdk_iam::Client, role: &str) -> Option<Value> {
    match iam.get_role_policy().role_name(role).policy_name(DENY_POLICY).send().await {
        Ok(answer) => {
            let text = percent_encoding::percent_decode_str(&answer.policy_document).decode_utf8_lossy().into_owned();
            Some(serde_json::from_str(&text).expect("the deny list is JSON"))
        }
        Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception()) => None,
        Err(error) => panic!("GetRolePolicy: {error:?}"),
    }
}
