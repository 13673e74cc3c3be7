//! What a Vault token minted for a role may do: its policies, and a dynamic secret read with it.

use serde::Deserialize;
use serde::de::Deserializer;

use super::checked_section::from_map;

/// What a Vault token minted for a role may do.
#[derive(Clone, Debug)]
pub struct VaultScope {
    pub policies: Vec<String>,
    /// A dynamic secret (e.g. `database/creds/readonly`) read with the job's token, so its lease
    /// is a child of that token and dies with it.
    pub secret_path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VaultFields {
    policies: Vec<String>,
    #[serde(default)]
    secret_path: Option<String>,
}

pub(super) struct VaultDoc(pub(super) VaultScope);

impl<'de> Deserialize<'de> for VaultDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_map(d, "a `vault:` mapping with `policies`", |doc: VaultFields| {
            if doc.policies.is_empty() {
                return Err("`vault.policies` is empty; hint: list at least one Vault policy".to_owned());
            }
            if doc.policies.iter().any(String::is_empty) {
                return Err("`vault.policies` has an empty policy name".to_owned());
            }
            if let Some(path) = &doc.secret_path {
                let bad = path.is_empty()
                    || path.starts_with('/')
                    || path.starts_with("v1/")
                    || path.split('/').any(|part| part.is_empty() || part == "." || part == "..")
                    || path.contains(['?', '#']);
                if bad {
                    return Err(format!(
                        "`vault.secret_path` `{path}` is not a Vault path; hint: write it as the API path after /v1/, e.g. database/creds/readonly"
                    ));
                }
            }
            Ok(VaultDoc(VaultScope { policies: doc.policies, secret_path: doc.secret_path }))
        })
    }
}
