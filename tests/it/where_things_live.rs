//! Where the broker's knowledge lives, checked by reading the tree: what it knows of one CI is
//! in that CI's folder (policy reads it from the CI's `Ci` record and names no CI), and what
//! records, keeps and reports the fleet is under `src/fleet/`.

use std::path::{Path, PathBuf};

use ci_creds::ci::CiKind;

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every file and folder below `dir`, as paths relative to `src/`.
fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        found.push(path.strip_prefix(src()).unwrap().to_owned());
        if path.is_dir() {
            walk(&path, found);
        }
    }
}

fn tree() -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(&src(), &mut found);
    found
}

/// A file's code, without its comments or its tests (a `#[cfg(test)]` module ends a file).
fn code_of(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(index, line)| (index + 1, line))
        .collect()
}

/// What would name a CI in policy's code: its variant, its title, its name as a quoted string,
/// the claims its lints pin a rule with, and its change requests' event and ref.
fn ci_words() -> Vec<(CiKind, String)> {
    let mut words = Vec::new();
    for kind in CiKind::ALL {
        let ci = kind.ci();
        words.push((kind, format!("CiKind::{kind:?}")));
        // GitHub's title and name also name the App-token credential, which policy defines
        // (`policy/github_app.rs`, written `github:`); the CI is still caught by its variant.
        if ci.title != "GitHub" {
            words.push((kind, ci.title.to_owned()));
            words.push((kind, format!("\"{}\"", kind.name())));
        }
        // `pinned_by` is left out: it names a rule condition policy defines (`job_name`).
        let lints = &ci.lints;
        let claims = lints.pinning_claims.iter().flat_map(|pinning| pinning.claims.iter().copied());
        let change_request = lints.change_request.iter().flat_map(|request| [request.event, request.git_ref]);
        for word in claims.chain(change_request) {
            words.push((kind, format!("\"{word}\"")));
        }
    }
    words
}

#[test]
fn policy_names_no_ci_in_its_code() {
    let words = ci_words();
    let mut found = Vec::new();
    for path in tree() {
        let is_test =
            path.components().any(|part| part.as_os_str() == "tests") || path.to_string_lossy().ends_with("_tests.rs");
        if !path.starts_with("policy") || path.extension().is_none_or(|ext| ext != "rs") || is_test {
            continue;
        }
        let text = std::fs::read_to_string(src().join(&path)).unwrap();
        for (line_number, line) in code_of(&text) {
            for (kind, word) in &words {
                if line.contains(word.as_str()) {
                    found.push(format!("src/{}:{line_number}: {word} ({})", path.display(), kind.name()));
                }
            }
        }
    }
    assert!(found.is_empty(), "policy/ names a CI; read it from the CI's `Ci` record instead:\n{}", found.join("\n"));
}

#[test]
fn a_ci_word_is_found_where_it_is_written() {
    let words = ci_words();
    let has = |word: &str| words.iter().any(|(_, w)| w == word);
    assert!(has("CiKind::AzurePipelines") && has("Jenkins") && has("\"jenkins\"") && has("\"prj_id\""));
    assert!(has("\"merge_request_event\"") && has("\"refs/pull/1/merge\"") && has("CiKind::Github"));
    assert!(!has("GitHub") && !has("\"github\"") && !has("\"job_name\""));
    let code = code_of("// Jenkins in a comment\nlet a = 1; // Jenkins\n#[cfg(test)]\nmod tests { Jenkins }\n");
    assert_eq!(code, vec![(2, "let a = 1; // Jenkins")]);
}

#[test]
fn the_fleet_lives_under_src_fleet() {
    let strays: Vec<_> = tree()
        .into_iter()
        .filter(|path| !path.starts_with("fleet") && path.to_string_lossy().contains("fleet"))
        .collect();
    assert!(strays.is_empty(), "files of the fleet outside src/fleet/: {strays:?}");
}
