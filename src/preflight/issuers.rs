//! Each `[[issuers]]`: its discovery document and JWKS fetched and parsed as verification
//! fetches them (`identity::probe`), and a key for each algorithm the issuer may sign with.

use super::Finding;
use crate::identity::{self, IssuerConfig};
use crate::net::HttpClient;

pub fn item(issuer: &IssuerConfig) -> String {
    format!("issuer {}", issuer.name)
}

pub async fn check(http: &HttpClient, issuer: &IssuerConfig) -> Finding {
    let item = item(issuer);
    let source = match &issuer.jwks_url {
        Some(_) => "jwks_url",
        None => "discovery document",
    };
    let keys = match identity::probe(http, issuer).await {
        Ok(keys) => keys,
        Err(reason) => {
            return Finding::failed(
                item,
                format!("cannot read its keys: {reason}"),
                format!("check `issuer` and `jwks_url` of this issuer, and that the broker reaches its {source}"),
            );
        }
    };
    let algorithms = |fits: bool| -> Vec<String> {
        keys.by_algorithm.iter().filter(|(_, count)| (*count > 0) == fits).map(|(alg, _)| format!("{alg:?}")).collect()
    };
    let (fitting, unfitting) = (algorithms(true), algorithms(false));
    let skipped = keys.published - keys.usable;
    let skipped = match skipped {
        0 => String::new(),
        n => format!("; {n} published key(s) skipped (no `kid`, not for signatures, or of an unsupported type)"),
    };
    let detail = format!("{} key(s) ({}){skipped}", keys.usable, fitting.join(", "));
    if fitting.is_empty() {
        let configured: Vec<String> = issuer.algorithms.iter().map(|alg| format!("{alg:?}")).collect();
        return Finding::failed(
            item,
            format!("{} usable key(s), none for {}{skipped}", keys.usable, configured.join(", ")),
            "set the issuer's `algorithms` to what it signs with, or check `jwks_url`",
        );
    }
    if !unfitting.is_empty() {
        return Finding::warn(
            item,
            format!("{detail}; none for {}", unfitting.join(", ")),
            "tokens signed with those are refused; remove them from the issuer's `algorithms` unless a key is coming",
        );
    }
    Finding::ok(item, detail)
}
