//! An OIDC issuer on loopback: `/.well-known/openid-configuration` and `/.well-known/jwks`,
//! counting how often each is fetched so tests can see what the broker asked.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::SigningKey;
use super::signing_key::KeyError;

pub struct DevIssuer {
    url: String,
    /// The first key signs; all are published.
    keys: RwLock<Vec<Arc<SigningKey>>>,
    discovery_fetches: AtomicUsize,
    jwks_fetches: AtomicUsize,
}

impl DevIssuer {
    /// Serves an issuer with `key` on `listen`, which must be a loopback address.
    pub async fn start(listen: SocketAddr, key: SigningKey) -> std::io::Result<Arc<Self>> {
        if !listen.ip().is_loopback() {
            return Err(std::io::Error::other("the development issuer listens on loopback only"));
        }
        let listener = TcpListener::bind(listen).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let issuer = Arc::new(Self {
            url,
            keys: RwLock::new(vec![Arc::new(key)]),
            discovery_fetches: AtomicUsize::new(0),
            jwks_fetches: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/.well-known/jwks", get(jwks))
            .with_state(issuer.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(issuer)
    }

    /// The `iss` of the tokens this issuer signs.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn current_key(&self) -> Arc<SigningKey> {
        self.keys.read().map(|keys| keys[0].clone()).unwrap_or_else(|poisoned| poisoned.into_inner()[0].clone())
    }

    pub fn sign(&self, claims: &Value) -> Result<String, KeyError> {
        self.current_key().sign(claims)
    }

    /// Publishes `key` and signs with it from now on; with `retire_old`, the old keys disappear.
    pub fn rotate(&self, key: SigningKey, retire_old: bool) {
        let mut keys = self.keys.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if retire_old {
            keys.clear();
        }
        keys.insert(0, Arc::new(key));
    }

    pub fn jwks_fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    pub fn discovery_fetches(&self) -> usize {
        self.discovery_fetches.load(Ordering::SeqCst)
    }

    fn jwks_document(&self) -> Value {
        let keys = self.keys.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        // A symmetric key in the set must be ignored by verifiers; publish one to prove it.
        let mut published: Vec<Value> = keys.iter().map(|key| key.jwk().clone()).collect();
        published.push(json!({ "kty": "oct", "kid": "symmetric", "k": "c2VjcmV0" }));
        json!({ "keys": published })
    }
}

async fn discovery(State(issuer): State<Arc<DevIssuer>>) -> Json<Value> {
    issuer.discovery_fetches.fetch_add(1, Ordering::SeqCst);
    Json(json!({
        "issuer": issuer.url,
        "jwks_uri": format!("{}/.well-known/jwks", issuer.url),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256", "ES256"],
    }))
}

async fn jwks(State(issuer): State<Arc<DevIssuer>>) -> Json<Value> {
    issuer.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    Json(issuer.jwks_document())
}
