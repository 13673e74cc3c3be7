//! "Adding a CI" (docs/development.md), checked: every CI of `CiKind::ALL` is in every table the
//! checklist names that a test can read. A CI missing from one fails here, naming the CI and the
//! table. What the compiler already refuses (a `Ci` field left out, a `JobLocator` arm) is not
//! repeated here.

use std::path::PathBuf;

use ci_creds::ci::CiKind;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// One table a new CI joins: the file it is in, and what must be there for each CI.
struct Table {
    file: &'static str,
    /// For a CI, what the file must hold (or, for a folder's file, the path that must exist).
    entries: fn(&Names) -> Vec<String>,
    check: Check,
}

enum Check {
    /// Each entry is a path below the repository that must exist; for `a.rs`, `a/mod.rs` will do.
    Exists,
    /// Each entry must appear in the file.
    Contains,
    /// Some line of the file must start with each entry.
    LineStarts,
    /// The line that starts so (a table's header) must hold each entry.
    InLineStarting(&'static str),
}

/// How each table spells a CI.
struct Names {
    /// `CiKind::name`: `azure_pipelines`.
    name: &'static str,
    /// Its folder under `src/ci/`: `github_actions`.
    module: &'static str,
    /// How prose names it: `Azure Pipelines`.
    title: &'static str,
    /// Its fixtures' prefix: `azure-pipelines`.
    fixture: String,
}

impl Names {
    fn of(kind: CiKind) -> Self {
        Self {
            name: kind.name(),
            module: kind.module(),
            title: kind.ci().title,
            fixture: kind.name().replace('_', "-"),
        }
    }
}

const TABLES: &[Table] = &[
    Table {
        file: "src/ci/",
        entries: |ci| vec![format!("src/ci/{}/mod.rs", ci.module), format!("src/ci/{}/tests.rs", ci.module)],
        check: Check::Exists,
    },
    Table {
        file: "fuzz/fuzz_targets/",
        entries: |ci| {
            vec![format!("fuzz/fuzz_targets/token_{}.rs", ci.name), format!("fuzz/fuzz_targets/webhook_{}.rs", ci.name)]
        },
        check: Check::Exists,
    },
    Table {
        file: "fuzz/Cargo.toml",
        entries: |ci| {
            ["token", "webhook"]
                .iter()
                .map(|target| format!("name = \"{target}_{0}\"\npath = \"fuzz_targets/{target}_{0}.rs\"", ci.name))
                .collect()
        },
        check: Check::Contains,
    },
    // The harnesses' tests: each CI's fixture seed must verify, its completion seed authenticate.
    Table { file: "fuzz/src/token.rs", entries: |ci| vec![format!("\"token_{}\"", ci.name)], check: Check::Contains },
    Table {
        file: "fuzz/src/webhook.rs",
        entries: |ci| vec![format!("\"webhook_{}\"", ci.name)],
        check: Check::Contains,
    },
    Table {
        file: "fuzz/seed_corpus.py",
        entries: |ci| vec![format!("\"token_{}\"", ci.name), format!("\"webhook_{}\"", ci.name)],
        check: Check::Contains,
    },
    Table {
        file: "fuzz/corpus/",
        entries: |ci| vec![format!("fuzz/corpus/token_{}/fixture", ci.name)],
        check: Check::Exists,
    },
    Table {
        file: "fuzz/README.md",
        entries: |ci| vec![format!("`token_{}`", ci.name), format!("`webhook_{}`", ci.name)],
        check: Check::Contains,
    },
    Table {
        file: "tests/fixtures/",
        entries: |ci| vec![format!("tests/fixtures/{}-token-claims.json", ci.fixture)],
        check: Check::Exists,
    },
    Table {
        file: "tests/fixtures/README.md",
        entries: |ci| vec![format!("| {}-token-claims.json |", ci.fixture)],
        check: Check::Contains,
    },
    // The claims table: a column per CI.
    Table {
        file: "docs/issuers.md",
        entries: |ci| vec![format!("| {} ", ci.title)],
        check: Check::InLineStarting("| field |"),
    },
    Table {
        file: "docs/job-end.md",
        entries: |ci| vec![format!("`POST /v1/webhooks/{}`", ci.name)],
        check: Check::Contains,
    },
    // Which runner facts name a host.
    Table { file: "docs/runners.md", entries: |ci| vec![format!("| {} |", ci.title)], check: Check::LineStarts },
    // `ci-creds get` in its jobs: a section per CI.
    Table { file: "docs/cli.md", entries: |ci| vec![format!("### {}", ci.title)], check: Check::LineStarts },
    Table { file: "docs/config.md", entries: |ci| vec![format!("[webhooks.{}]", ci.name)], check: Check::LineStarts },
    Table { file: "docs/first-exchange.md", entries: |ci| vec![format!("## {}", ci.title)], check: Check::LineStarts },
    Table { file: "docs/api.md", entries: |ci| vec![format!("`/{}`", ci.name)], check: Check::Contains },
];

fn exists(path: &str) -> bool {
    let folder = path.strip_suffix(".rs").map(|module| format!("{module}/mod.rs"));
    root().join(path).exists() || folder.is_some_and(|folder| root().join(folder).exists())
}

/// What of `table` is missing for `ci`.
fn missing(table: &Table, ci: &Names) -> Vec<String> {
    let entries = (table.entries)(ci);
    match table.check {
        Check::Exists => entries.into_iter().filter(|path| !exists(path)).collect(),
        Check::Contains => {
            let text = read(table.file);
            entries.into_iter().filter(|entry| !text.contains(entry.as_str())).collect()
        }
        Check::LineStarts => {
            let text = read(table.file);
            entries.into_iter().filter(|entry| !text.lines().any(|line| line.starts_with(entry.as_str()))).collect()
        }
        Check::InLineStarting(start) => {
            let text = read(table.file);
            let line = text.lines().find(|line| line.starts_with(start)).unwrap_or_default();
            entries.into_iter().filter(|entry| !line.contains(entry.as_str())).collect()
        }
    }
}

#[test]
fn every_ci_is_in_every_table_adding_a_ci_names() {
    let mut gaps = Vec::new();
    for kind in CiKind::ALL {
        let ci = Names::of(kind);
        for table in TABLES {
            for entry in missing(table, &ci) {
                gaps.push(format!("{} is missing from {}: {entry:?}", ci.name, table.file));
            }
        }
    }
    assert!(gaps.is_empty(), "{}", gaps.join("\n"));
}

#[test]
fn adding_a_ci_names_every_table_checked_here() {
    let guide = read("docs/development.md");
    let section = guide.split("## Adding a CI").nth(1).expect("docs/development.md has \"Adding a CI\"");
    let section = section.split("\n## ").next().unwrap_or_default();
    let unnamed: Vec<_> =
        TABLES.iter().map(|table| table.file).filter(|file| !section.contains(&format!("`{file}"))).collect();
    assert!(unnamed.is_empty(), "\"Adding a CI\" does not name {unnamed:?}");
}
