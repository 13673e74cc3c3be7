//! The store: reachable, and at the schema this build migrates it to. Read only: `serve`
//! applies migrations, not `check`.

use secrecy::ExposeSecret;

use super::Finding;
use crate::config::Config;
use crate::store::{self, StoreKind};

pub async fn check(config: &Config) -> Vec<Finding> {
    vec![finding(config).await]
}

async fn finding(config: &Config) -> Finding {
    let item = "store";
    let password = match config.store_password() {
        Ok(password) => password,
        Err(error) => {
            return Finding::failed(item, error.to_string(), "set the env var `store.password_env` names");
        }
    };
    let kind = match config.store.kind() {
        Ok(StoreKind::Sqlite) => "sqlite",
        Ok(StoreKind::Postgres) => "postgres",
        Err(error) => return Finding::failed(item, error.to_string(), "fix `store.url`"),
    };
    let state = match store::schema_state(&config.store, password.as_ref()).await {
        Ok(state) => state,
        Err(error) => {
            // A driver's message may quote the connection URL; the password never reaches output.
            let mut reason = error.to_string();
            if let Some(password) = &password {
                reason = reason.replace(password.expose_secret(), "***");
            }
            return Finding::failed(
                item,
                format!("{kind}: {reason}"),
                "check `store.url`, that the database is up and reachable, and the password",
            );
        }
    };
    match state.applied {
        None => Finding::warn(
            item,
            format!("{kind}: the database file does not exist yet"),
            format!("`serve` creates it and applies the schema (version {})", state.latest),
        ),
        Some(applied) if applied > state.latest => Finding::failed(
            item,
            format!("{kind}: schema version {applied}, newer than this build's {}", state.latest),
            "upgrade this broker to the version that migrated the store",
        ),
        Some(applied) if applied < state.latest => Finding::warn(
            item,
            format!("{kind}: schema version {applied} of {}", state.latest),
            "`serve` applies the missing migrations at start; back the database up first",
        ),
        Some(applied) => Finding::ok(item, format!("{kind}: reachable, schema version {applied} (this build's)")),
    }
}
