//! `ci-creds serve`: wires config, policy, store, identity and backends into the HTTP API.

use std::sync::Arc;

use thiserror::Error;
use tokio::net::TcpListener;

use crate::backends::Backends;
use crate::backends::aws::AwsBackend;
use crate::backends::github_app::GithubAppBackend;
use crate::backends::vault::{VaultBackend, VaultLogin};
use crate::ci_api::CiApis;
use crate::config::{self, Config};
use crate::identity::Verifier;
use crate::lifecycle::{Broker, Parts, ci_credentials, reconciler, revocation, sweeper};
use crate::net::HttpClient;
use crate::policy::{BackendKind, PolicySet};
use crate::store::StoreKind;
use crate::{api, audit, backends, metrics, store};

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] config::Error),
    #[error("policy: role `{role}` uses backend `{backend}`, but the config has no [{backend}] section")]
    BackendMissing { role: String, backend: &'static str },
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error(transparent)]
    Audit(#[from] audit::Error),
    #[error(transparent)]
    Metrics(#[from] metrics::Error),
    #[error(transparent)]
    Backend(#[from] backends::Error),
    #[error("cannot build the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("server: {0}")]
    Serve(std::io::Error),
}

/// Builds everything `serve` needs; fails before listening if anything is misconfigured.
pub async fn parts(config: &Config) -> Result<Parts, Error> {
    let secrets = config.secrets()?;
    let policy = config::load_policies(&config.policy_dir)?;
    check_backends(&policy, config)?;
    let store = store::Store::open(&config.store, secrets.store_password.as_ref()).await?;
    let http = HttpClient::new()?;
    let vault = match (&config.vault, secrets.vault_credentials) {
        (Some(vault), Some(credentials)) => {
            if vault.token_role.is_none() {
                tracing::warn!(
                    "no [vault] token_role: job tokens are children of the broker's own Vault token and are revoked \
                     with it when it expires or is revoked (docs/vault.md)"
                );
            }
            let timeout = std::time::Duration::from_secs(vault.timeout_seconds);
            let login = VaultLogin::start(credentials, &vault.address, http.clone(), timeout).await?;
            Some(VaultBackend::with_login(vault, login, http.clone())?)
        }
        _ => None,
    };
    let aws = match &config.aws {
        Some(aws) => {
            let role_arns = policy.roles().filter_map(|role| role.aws.as_ref()).map(|scope| scope.role_arn.as_str());
            Some(AwsBackend::new(aws, role_arns).await?)
        }
        None => None,
    };
    let github = match (&config.github, &secrets.github_private_key) {
        (Some(github), Some(key)) => Some(GithubAppBackend::new(github, key)?),
        _ => None,
    };
    let ci_apis = CiApis::from_config(&config.ci_api, &config.issuers).map_err(|error| match error {
        crate::ci_api::Error::Config { key, message } => Error::Config(config::Error::Invalid { key, message }),
        other => Error::Config(config::Error::Invalid { key: "ci_api".into(), message: other.to_string() }),
    })?;
    let verifier = Verifier::new(config.audience.clone(), config.issuers.clone(), http);
    let audit = audit::Audit::open(&config.audit)?;
    if !audit.enabled() {
        tracing::warn!("no [audit] file or stdout configured: decisions are not recorded in an audit trail");
    }
    Ok(Parts {
        verifier,
        policy,
        store,
        backends: Backends { vault, aws, github_app: github },
        webhooks: secrets.webhooks,
        lifecycle: config.lifecycle.clone(),
        audit,
        ci_apis,
    })
}

fn check_backends(policy: &PolicySet, config: &Config) -> Result<(), Error> {
    for role in policy.roles() {
        match role.backend {
            BackendKind::Vault if config.vault.is_none() => {
                return Err(Error::BackendMissing { role: role.name.clone(), backend: "vault" });
            }
            BackendKind::Aws if config.aws.is_none() => {
                return Err(Error::BackendMissing { role: role.name.clone(), backend: "aws" });
            }
            BackendKind::GithubApp if config.github.is_none() => {
                return Err(Error::BackendMissing { role: role.name.clone(), backend: "github" });
            }
            BackendKind::Vault | BackendKind::Aws | BackendKind::GithubApp => {}
        }
    }
    Ok(())
}

/// `serve --check-config`: everything `serve` checks before listening (config, secrets, policy,
/// the store and its schema) plus that every configured backend answers; then a summary.
pub async fn check(config: &Config) -> Result<String, Error> {
    let parts = parts(config).await?;
    parts.backends.check().await?;
    let store = match parts.store.kind() {
        StoreKind::Sqlite => "sqlite",
        StoreKind::Postgres => "postgres",
    };
    Ok(format!(
        "config ok: {} issuer(s), {} role(s), store {store} (migrated), backends answering: {}",
        config.issuers.len(),
        parts.policy.roles().count(),
        [
            parts.backends.vault.as_ref().map(|_| "vault"),
            parts.backends.aws.as_ref().map(|_| "aws"),
            parts.backends.github_app.as_ref().map(|_| "github"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
    ))
}

pub async fn serve(config: Config) -> Result<(), Error> {
    metrics::install(&config.metrics)?;
    let parts = parts(&config).await?;
    let store = parts.store.clone();
    let roles = parts.policy.roles().count();
    let vault_login = parts.backends.vault.as_ref().map(|vault| vault.login().clone());
    let broker = Arc::new(Broker::new(parts));
    // One broker process owns an SQLite file: claims still held are a dead process's. Replicas
    // sharing PostgreSQL wait for a dead replica's claims to lapse instead.
    if store.kind() == StoreKind::Sqlite {
        let released = store.release_claims().await? + store.release_ask_claims().await?;
        if released > 0 {
            tracing::warn!(released, "resuming revocations a previous broker process had claimed");
        }
    }
    // Leases left pending by a broker that died mid-mint: on SQLite every one of them (this
    // process owns the file, so none is being minted), on PostgreSQL those older than any mint.
    let pending_bound = match store.kind() {
        StoreKind::Sqlite => 0,
        StoreKind::Postgres => crate::lifecycle::PENDING_GIVE_UP_SECONDS,
    };
    broker.exchange().settle_unrecorded(crate::clock::now() + 1 - pending_bound).await?;
    let listener =
        TcpListener::bind(config.listen).await.map_err(|source| Error::Listen { addr: config.listen, source })?;
    let addr = listener.local_addr().map_err(Error::Serve)?;
    tokio::spawn(crate::metrics::upkeep());
    tokio::spawn(revocation::run(broker.clone()));
    tokio::spawn(sweeper::run(broker.clone()));
    tokio::spawn(reconciler::run(broker.clone()));
    tokio::spawn(crate::fleet::gauges::run(store.clone(), config.lifecycle.fleet_refresh_interval));
    tokio::spawn(ci_credentials::run(broker.clone()));
    if let Some(login) = vault_login {
        tokio::spawn(login.keep_alive());
    }
    tracing::info!(%addr, roles, "ci-creds listening");
    api::limits::serve(
        listener,
        api::router(broker, &config.limits, config.trusted_proxies.clone()),
        &config.limits,
        shutdown_signal(),
    )
    .await
    .map_err(Error::Serve)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}
