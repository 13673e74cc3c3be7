//! Kubernetes' TokenReview API as Vault's Kubernetes auth method calls it, on loopback: `POST
//! /apis/authentication.k8s.io/v1/tokenreviews` with `spec.token` answers `status.authenticated`
//! and the service account as `status.user` (`system:serviceaccount:<namespace>:<name>`, its
//! uid) for the one token the test says is current (Kubernetes API reference, TokenReview v1;
//! OpenBao internal/builtin/credential/kubernetes/token_review.go reads exactly these fields).
//! Service account tokens are signed JWTs with the claims `kubernetes.io/serviceaccount/...`.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use ci_creds::dev::SigningKey;
use serde_json::{Value, json};

pub const NAMESPACE: &str = "ci-creds";
pub const SERVICE_ACCOUNT: &str = "ci-creds";
pub const SERVICE_ACCOUNT_UID: &str = "2f0c1a8e-5b7d-4c3e-9a61-0d9f4b2e7c15";

/// Any CA certificate: Vault's config requires one with `disable_local_ca_jwt`, and the
/// stand-in is plain http on loopback, so it is never used. A self-signed P-256 certificate.
pub const CA_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBkjCCATmgAwIBAgIUUy4eDBZJTNII68cf7VlGvvzLdE0wCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTa3ViZXJuZXRlcy1zdGFuZC1pbjAgFw0yNjEyMDcwMzE2MTBa
GA8yMTI2MTExMzAzMTYxMFowHjEcMBoGA1UEAwwTa3ViZXJuZXRlcy1zdGFuZC1p
bjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABIAnKEbsihUQ+bt0hCEyU6fCFLdP
Kh6x+0WU3EwBf4OO3oC9AxBQBvRS9iaMjvV0PPdu0zTGqTpLkcc5vp3218SjUzBR
MB0GA1UdDgQWBBT8wSqvwYkiic/M2Euje4KG4SWShzAfBgNVHSMEGDAWgBT8wSqv
wYkiic/M2Euje4KG4SWShzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cA
MEQCIE2Sa+1b+Y+Pf0sD84GtratgWJLUUQ/Bf4quRUR9o7jKAiBVA5bUaWt3wEQb
CbtOVJxJFeorzS0YgenJs4sR46Wstw==
-----END CERTIFICATE-----
";

pub struct Kubernetes {
    pub url: String,
    key: SigningKey,
    /// The one service account token reviews accept; the kubelet rotates it.
    current: Arc<Mutex<String>>,
    /// How many reviews were asked.
    pub reviews: Arc<Mutex<usize>>,
}

impl Kubernetes {
    pub async fn start() -> Self {
        let current = Arc::new(Mutex::new(String::new()));
        let reviews = Arc::new(Mutex::new(0));
        let router = Router::new()
            .route("/apis/authentication.k8s.io/v1/tokenreviews", post(review))
            .with_state((current.clone(), reviews.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, key: SigningKey::generate_rs256().expect("RSA key"), current, reviews }
    }

    /// A new service account token, now the only one reviews accept (the previous is revoked).
    pub fn rotate(&self) -> String {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let claims = json!({
            "iss": "kubernetes/serviceaccount",
            "sub": format!("system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"),
            "kubernetes.io/serviceaccount/namespace": NAMESPACE,
            "kubernetes.io/serviceaccount/service-account.name": SERVICE_ACCOUNT,
            "kubernetes.io/serviceaccount/service-account.uid": SERVICE_ACCOUNT_UID,
            "jti": uuid::Uuid::new_v4().to_string(),
            "iat": now,
            "exp": now + 3600,
        });
        let token = self.key.sign(&claims).expect("signs");
        *self.current.lock().unwrap() = token.clone();
        token
    }
}

type Shared = (Arc<Mutex<String>>, Arc<Mutex<usize>>);

async fn review(State((current, reviews)): State<Shared>, Json(request): Json<Value>) -> Json<Value> {
    *reviews.lock().unwrap() += 1;
    let token = request["spec"]["token"].as_str().unwrap_or_default();
    let authenticated = !token.is_empty() && token == current.lock().unwrap().as_str();
    let status = if authenticated {
        json!({
            "authenticated": true,
            "user": {
                "username": format!("system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"),
                "uid": SERVICE_ACCOUNT_UID,
            },
            "audiences": request["spec"]["audiences"].clone(),
        })
    } else {
        json!({ "authenticated": false, "error": "the token has been revoked" })
    };
    Json(json!({ "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status }))
}
