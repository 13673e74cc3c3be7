//! The `*_test.yaml` format kept next to policies: claims in, expected granted/denied roles out.
//!
//! ```yaml
//! tests:
//!   - name: a push to main may deploy
//!     claims_file: fixtures/github.json   # optional, relative to this file
//!     claims: { ref: refs/heads/main }    # merged over claims_file (or the whole claim set)
//!     issuer: github                      # optional, with kind: how to map the claims
//!     kind: github
//!     runner: { group: release, labels: [self-hosted, linux] }   # optional: what the CI would tell
//!     granted: [deploy-prod]
//!     denied: [read-secrets]
//! ```

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::mapping::parse_kind;
use super::runner_facts::RunnerDoc;
use super::{Error, MappingChoice, read};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestFileDoc {
    tests: Vec<CaseDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseDoc {
    name: String,
    #[serde(default)]
    claims_file: Option<String>,
    #[serde(default)]
    claims: Map<String, Value>,
    #[serde(default)]
    issuer: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    runner: Option<RunnerDoc>,
    #[serde(default)]
    granted: Vec<String>,
    #[serde(default)]
    denied: Vec<String>,
}

/// One test case, its claims resolved.
pub(super) struct Case {
    pub(super) name: String,
    pub(super) claims: Value,
    pub(super) mapping: Option<MappingChoice>,
    pub(super) runner: Option<RunnerDoc>,
    pub(super) granted: Vec<String>,
    pub(super) denied: Vec<String>,
}

pub(super) fn load(path: &Path) -> Result<Vec<Case>, Error> {
    let shown = path.display().to_string();
    let invalid = |message: String| Error::Claims { path: shown.clone(), message };
    let doc: TestFileDoc = serde_yaml_ng::from_str(&read(path)?).map_err(|e| match e.location() {
        Some(loc) => Error::Claims { path: format!("{shown}:{}:{}", loc.line(), loc.column()), message: e.to_string() },
        None => invalid(e.to_string()),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    doc.tests
        .into_iter()
        .map(|case| {
            let name = case.name;
            if case.granted.is_empty() && case.denied.is_empty() {
                return Err(invalid(format!(
                    "test `{name}` expects nothing; hint: list roles under `granted:` or `denied:`"
                )));
            }
            let mut claims = match &case.claims_file {
                Some(file) => match serde_json::from_str(&read(&base.join(file))?) {
                    Ok(Value::Object(map)) => map,
                    _ => {
                        return Err(invalid(format!("test `{name}`: claims_file {file} is not a JSON object")));
                    }
                },
                None => Map::new(),
            };
            claims.extend(case.claims);
            let mapping = match (case.issuer, case.kind) {
                (Some(issuer), Some(kind)) => Some(MappingChoice::Explicit {
                    issuer,
                    kind: parse_kind(&kind).map_err(|e| invalid(format!("test `{name}`: {e}")))?,
                }),
                (None, None) => None,
                _ => {
                    return Err(invalid(format!("test `{name}`: give both `issuer` and `kind`, or neither")));
                }
            };
            Ok(Case {
                name,
                claims: Value::Object(claims),
                mapping,
                runner: case.runner,
                granted: case.granted,
                denied: case.denied,
            })
        })
        .collect()
}
