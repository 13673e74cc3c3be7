//! Every relative link in the repository's Markdown, and every repository path it names in
//! backticks, points at a file the repository has: a reader following the docs from a clone
//! finds what they cite.

use std::path::{Path, PathBuf};

/// Folders never read: build output, git's own, generated corpora, a local setup's state.
const SKIPPED: &[&str] = &["target", ".git", "corpus", ".dev", "out", "node_modules"];

/// The repository's top-level folders: a backticked word starting with one of these and a `/`
/// is a path.
const TOP_FOLDERS: &[&str] =
    &["src", "tests", "docs", "scripts", "deploy", "benches", "fuzz", "policy", "migrations", "openapi", ".ci"];

/// Top-level files a text may name bare.
const TOP_FILES: &[&str] = &["README.md", "BENCHMARKS.md", "THREAT_MODEL.md", "Cargo.toml"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !SKIPPED.contains(&name) {
                markdown_files(&path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The targets of `[text](target)` that name no URL scheme and are not anchors alone, without
/// their anchor.
fn relative_links(text: &str) -> Vec<&str> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let is_url =
                target.split_once(':').is_some_and(|(scheme, _)| scheme.bytes().all(|b| b.is_ascii_lowercase()));
            let target = target.split('#').next().unwrap_or_default();
            (!is_url && !target.is_empty() && !target.contains(char::is_whitespace)).then_some(target)
        })
        .collect()
}

/// Words in backticks shaped as a repository path: a top-level folder and a `/`, or a top-level
/// file; a line suffix (`:12`) and trailing punctuation dropped; patterns and placeholders
/// (`<ci>`, `*`, `{a,b}`, `$VAR`) are not paths.
fn backticked_paths(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|word| {
            if word.is_empty() || word.contains(|c: char| c.is_whitespace() || "<>*{}$?[]|".contains(c)) {
                return None;
            }
            let word = word.trim_end_matches(['.', ',', ';', ':']);
            let word = match word.rsplit_once(':') {
                Some((path, line)) if line.bytes().all(|b| b.is_ascii_digit() || b == b'-') => path,
                _ => word,
            };
            let top = word.split('/').next().unwrap_or_default();
            ((TOP_FOLDERS.contains(&top) && word.contains('/')) || TOP_FILES.contains(&word)).then_some(word)
        })
        .collect()
}

#[test]
fn every_relative_link_and_named_path_in_the_docs_exists() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() > 10, "the docs were found: {files:?}");
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let dir = file.parent().expect("a file's folder");
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        for link in relative_links(&text) {
            if !dir.join(link).exists() {
                missing.push(format!("{shown}: link ({link})"));
            }
        }
        // A path in backticks is the repository's, or (inside a folder with its own code, such as
        // fuzz/) that folder's.
        for path in backticked_paths(&text) {
            if !root.join(path).exists() && !dir.join(path).exists() {
                missing.push(format!("{shown}: `{path}`"));
            }
        }
    }
    assert!(missing.is_empty(), "the docs name files the repository does not have:\n{}", missing.join("\n"));
}

#[test]
fn links_and_paths_are_found_as_a_reader_sees_them() {
    let text = "see [the guide](docs/x.md#part), [site](https://example.com), [here](#anchor), \
                `src/a.rs:12`, `src/ci/<ci>/api.rs`, `README.md`, `cargo test`, `tests/it/b.rs`.";
    assert_eq!(relative_links(text), ["docs/x.md"]);
    assert_eq!(backticked_paths(text), ["src/a.rs", "README.md", "tests/it/b.rs"]);
}
