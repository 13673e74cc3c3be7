//! `ci-creds policy check [DIR]`: every load error with file:line and a hint, then warnings on
//! rules that load fine but are risky. Files are parsed one by one first, so one broken file does
//! not hide the errors of the next.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::path::Path;

use super::mapping::{config_ci_apis, config_issuers};
use super::{Error, MappingChoice, Report};
use crate::ci::CiKind;
use crate::config::read_policy_files;
use crate::policy::{PolicyFile, PolicySet};

/// With the broker's config (`choice`), rules are also judged as the CI of the issuers they name.
pub fn check(dir: &Path, choice: &MappingChoice) -> Result<Report, Error> {
    let issuer_kinds: BTreeMap<String, CiKind> = match choice {
        MappingChoice::Config(path) => config_issuers(path)?.into_iter().map(|i| (i.name, i.kind)).collect(),
        _ => BTreeMap::new(),
    };
    let ci_apis: BTreeSet<String> = match choice {
        MappingChoice::Config(path) => config_ci_apis(path)?,
        _ => BTreeSet::new(),
    };
    let files = read_policy_files(dir).map_err(|source| Error::Read { path: dir.display().to_string(), source })?;
    let sources: Vec<PolicyFile<'_>> = files.iter().map(|(path, text)| PolicyFile { path, text }).collect();
    let mut text = String::new();
    let mut errors = 0;
    // Which file defines each role, to place the warnings of the combined set.
    let mut role_files: HashMap<String, &str> = HashMap::new();
    for file in &sources {
        match PolicySet::parse(std::slice::from_ref(file)) {
            Ok(set) => {
                for role in set.roles() {
                    role_files.insert(role.name.clone(), file.path);
                }
            }
            Err(error) => {
                errors += 1;
                let _ = writeln!(text, "error: {error}");
            }
        }
    }
    let mut warnings = 0;
    if errors == 0 {
        match PolicySet::parse(&sources) {
            Ok(set) => {
                let mut found = set.lint(&issuer_kinds);
                found.extend(set.lint_unknowable_refs(&issuer_kinds, &ci_apis));
                for warning in found {
                    warnings += 1;
                    let path = role_files.get(&warning.role).copied().unwrap_or_default();
                    let _ = writeln!(
                        text,
                        "warning: {path}: role `{}`, allow rule {}: {}; hint: {}",
                        warning.role, warning.rule, warning.message, warning.hint
                    );
                }
            }
            Err(error) => {
                errors += 1;
                let _ = writeln!(text, "error: {error}");
            }
        }
    }
    if sources.is_empty() {
        warnings += 1;
        let _ = writeln!(
            text,
            "warning: {}: no *.yaml or *.yml policy file; the broker would refuse every role",
            dir.display()
        );
    }
    let _ = writeln!(text, "{}: {} file(s), {errors} error(s), {warnings} warning(s)", dir.display(), sources.len());
    Ok(Report { text, ok: errors == 0 })
}
