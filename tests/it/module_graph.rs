//! "No module imports one that imports it back" (docs/design.md, Layout), checked. Reads every file of
//! `src/` reached from `lib.rs`, builds the graph of which file uses which (`use crate::…`,
//! `use super::…`, inline `crate::a::b` and `super::a` paths, and a string that is such a path, as
//! serde's `with = "crate::a::f"`; each resolved to the deepest module that is a file, through a
//! `use` that re-exports it), and refuses a cycle:
//! - among the top-level modules (`identity`, `policy`, `store`, `api` …; a module with its own
//!   children counted as one);
//! - among the files (and sub-folders) of any one folder. A folder's `mod.rs` is their parent,
//!   not one of them: children using what it declares is no cycle.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Edges that close a cycle and are left for now, `(file, file it uses)` under `src/`, each with
/// a comment saying why; remove the entry with the use. An entry whose edge no longer exists
/// fails the test, so the list only shrinks.
const ALLOWED: &[(&str, &str)] = &[];

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let graph = Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let edges = graph.edges();

    let stale: Vec<_> = ALLOWED.iter().filter(|allowed| !edges.contains_key(*allowed)).collect();
    assert!(stale.is_empty(), "ALLOWED names edges that no longer exist; remove them: {stale:?}");

    let allowed = |edge: &(&str, &str)| ALLOWED.iter().any(|allowed| allowed == edge);
    let checked: BTreeMap<_, _> =
        edges.iter().filter(|(edge, _)| !allowed(edge)).map(|(e, p)| (*e, p.clone())).collect();
    let cycles = graph.cycles(&checked);
    for cycle in graph.cycles(&edges).iter().filter(|cycle| !cycles.contains(cycle)) {
        eprintln!("allowed for now (see ALLOWED):\n{cycle}");
    }
    assert!(cycles.is_empty(), "modules that import each other:\n\n{}", cycles.join("\n"));
}

/// docs/design.md's layers, highest first: a top-level module uses only modules of its own layer or
/// of a layer below, so nothing reaches back up.
const LAYERS: &[&[&str]] = &[
    &["server", "config", "policy_cli", "preflight"],
    &["api", "client"],
    &["lifecycle"],
    &["ci_api", "audit", "fleet", "inspect"],
    &["identity", "policy", "backends", "store"],
    // What each CI is and says, and the job and runner its claims describe: what every layer
    // above judges, records and mints for.
    &["ci"],
    // `dev` signs tokens for the local issuer, the tests and the fuzz targets.
    &["metrics", "net", "clock", "duration", "env_secret", "dev", "table"],
];

#[test]
fn no_module_reaches_back_up_a_layer() {
    let graph = Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let layer = |file: &str| {
        let top = file.trim_start_matches("src/").split(['/', '.']).next().unwrap_or_default().to_owned();
        let layer = LAYERS.iter().position(|layer| layer.contains(&top.as_str()));
        (top, layer)
    };
    let mut upward = BTreeSet::new();
    for ((from, to), path) in graph.edges() {
        let ((from_top, from_layer), (to_top, to_layer)) = (layer(from), layer(to));
        if from_top == "lib" || from_top == to_top {
            continue;
        }
        match (from_layer, to_layer) {
            (Some(from_layer), Some(to_layer)) if to_layer >= from_layer => {}
            (Some(_), Some(_)) => {
                upward.insert(format!("{from_top} → {to_top}: {from} uses {path}"));
            }
            _ => {
                upward.insert(format!("{from_top} or {to_top} is in no layer of LAYERS"));
            }
        }
    }
    assert!(upward.is_empty(), "modules that reach up a layer:\n{}", Vec::from_iter(upward).join("\n"));
}

#[test]
fn a_cycle_is_found() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "pub mod a; pub mod b; pub mod c;"),
        ("a.rs", "use crate::b::Thing;"),
        ("b.rs", "pub struct Thing; fn f() -> crate::c::Other { todo!() }"),
        ("c.rs", "pub struct Other; #[serde(with = \"super::a::f\")] struct S; // crate::b is a comment"),
    ]);
    let cycles = graph.cycles(&graph.edges());
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("a → b → c → a\n"), "{}", cycles[0]);
}

#[test]
fn uses_resolve_through_re_exports_and_within_folders() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "pub mod p; pub mod q;"),
        ("p/mod.rs", "mod m; mod n; pub use m::Role;"),
        ("p/m.rs", "pub struct Role; fn f() { super::n::g(); }"),
        ("p/n.rs", "use super::{Role, m as other}; use crate::q::{self, r::{R}};"),
        ("q.rs", "pub mod r { pub struct R; } fn g() { let _ = 'x'; let _: &'static str = \"see crate::p\"; }"),
    ]);
    let cycles = graph.cycles(&graph.edges());
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("p::m → p::n → p::m\n"), "{}", cycles[0]);
    assert!(cycles[0].contains("src/p/n.rs uses super::Role"), "{}", cycles[0]);
}

/// The crate's files, each with its module path (`["policy", "model"]`) and what it says.
struct Graph {
    files: Vec<File>,
    modules: BTreeMap<Vec<String>, usize>,
}

struct File {
    path: String,
    module: Vec<String>,
    source: Source,
}

/// What one file declares and uses. `scope` is the inline `mod x { … }` blocks around a path.
#[derive(Default)]
struct Source {
    children: Vec<Child>,
    imports: Vec<Import>,
    uses: Vec<(Vec<String>, Vec<String>)>,
}

/// `#[path = "…"] mod name;`
struct Child {
    scope: Vec<String>,
    name: String,
    path: Option<String>,
}

/// `use path as name;` brings `name` into the file's scope.
struct Import {
    scope: Vec<String>,
    name: String,
    path: Vec<String>,
}

impl Graph {
    /// Walks the module tree from `lib.rs`, as rustc does, whatever the `cfg`.
    fn read(src: &Path) -> Self {
        let read = |path: &Path| std::fs::read_to_string(src.join(path)).ok();
        Self::walk(&read)
    }

    fn from_sources(sources: &[(&str, &str)]) -> Self {
        let read = |path: &Path| sources.iter().find(|(name, _)| Path::new(name) == path).map(|(_, s)| s.to_string());
        Self::walk(&read)
    }

    fn walk(read: &dyn Fn(&Path) -> Option<String>) -> Self {
        let mut graph = Graph { files: Vec::new(), modules: BTreeMap::new() };
        let mut pending = vec![(PathBuf::from("lib.rs"), Vec::new())];
        while let Some((path, module)) = pending.pop() {
            if graph.modules.contains_key(&module) {
                continue;
            }
            let source = Source::parse(&read(&path).unwrap_or_else(|| panic!("src/{} cannot be read", path.display())));
            let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
            let own_folder = match path.file_name().and_then(|name| name.to_str()) {
                Some("lib.rs" | "mod.rs") => folder.clone(),
                _ => folder.join(path.file_stem().unwrap()),
            };
            for child in &source.children {
                let module = [&module[..], &child.scope[..], std::slice::from_ref(&child.name)].concat();
                let file = match &child.path {
                    Some(path) => folder.join(path),
                    None => {
                        let base = child.scope.iter().fold(own_folder.clone(), |base, scope| base.join(scope));
                        let flat = base.join(format!("{}.rs", child.name));
                        if read(&flat).is_some() { flat } else { base.join(&child.name).join("mod.rs") }
                    }
                };
                pending.push((file, module));
            }
            graph.modules.insert(module.clone(), graph.files.len());
            graph.files.push(File { path: format!("src/{}", path.display()), module, source });
        }
        graph
    }

    /// Every use of another file: `(file, file it uses)` with the first path that says so.
    fn edges(&self) -> BTreeMap<(&str, &str), String> {
        let mut edges = BTreeMap::new();
        for (index, file) in self.files.iter().enumerate() {
            for (scope, path) in &file.source.uses {
                let context = [&file.module[..], &scope[..]].concat();
                match self.resolve(&context, path, 0) {
                    Some(target) if target != index => {
                        let edge = (file.path.as_str(), self.files[target].path.as_str());
                        edges.entry(edge).or_insert_with(|| path.join("::"));
                    }
                    _ => {}
                }
            }
        }
        edges
    }

    /// The file a path names: the deepest module of the path that is a file, or, when the next
    /// segment is a name that file imports, the file that import names.
    fn resolve(&self, context: &[String], path: &[String], depth: usize) -> Option<usize> {
        let first = path.first()?;
        let absolute: Vec<String> = match first.as_str() {
            "crate" => path[1..].to_vec(),
            "super" => {
                let supers = path.iter().take_while(|segment| *segment == "super").count();
                let parent = context.get(..context.len().checked_sub(supers)?)?;
                [parent, &path[supers..]].concat()
            }
            "self" => [context, &path[1..]].concat(),
            _ if self.modules.contains_key(&[context, &path[..1]].concat()) => [context, path].concat(),
            _ => return None,
        };
        let depth_of_file = (0..=absolute.len()).rev().find(|&n| self.modules.contains_key(&absolute[..n]))?;
        let file = self.modules[&absolute[..depth_of_file]];
        let re_exported = absolute.get(depth_of_file).and_then(|name| {
            let imports = self.files[file].source.imports.iter();
            let import = imports.filter(|import| import.scope.is_empty()).find(|import| &import.name == name)?;
            let path = [&import.path[..], &absolute[depth_of_file + 1..]].concat();
            (depth < 8).then(|| self.resolve(&self.files[file].module, &path, depth + 1)).flatten()
        });
        Some(re_exported.unwrap_or(file))
    }

    /// The cycles among the children of each module, each once, with the uses that close it.
    fn cycles(&self, edges: &BTreeMap<(&str, &str), String>) -> Vec<String> {
        let module_of: BTreeMap<&str, &[String]> =
            self.files.iter().map(|f| (f.path.as_str(), &f.module[..])).collect();
        let mut found = Vec::new();
        for parent in self.modules.keys() {
            // `a → b` between two children of `parent`, with the first file use that makes it.
            let child = |file: &str| {
                let module = module_of[file];
                (module.len() > parent.len() && module.starts_with(parent)).then(|| module[..=parent.len()].join("::"))
            };
            let mut children: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for ((from, to), path) in edges {
                if let (Some(a), Some(b)) = (child(from), child(to))
                    && a != b
                {
                    children.entry(a).or_default().entry(b).or_insert_with(|| format!("{from} uses {path}"));
                }
            }
            let mut seen = BTreeSet::new();
            for start in children.keys() {
                let Some(cycle) = shortest_way_back(&children, start) else { continue };
                let mut members = cycle.clone();
                members.sort();
                if seen.insert(members) {
                    let mut text = format!("{} → {}\n", cycle.join(" → "), cycle[0]);
                    for (a, b) in cycle.iter().zip(cycle.iter().cycle().skip(1)) {
                        text += &format!("  {a} → {b}: {}\n", children[a][b]);
                    }
                    found.push(text);
                }
            }
        }
        found
    }
}

/// The shortest path from `start` back to itself, breadth first: `[start, …]`.
fn shortest_way_back(graph: &BTreeMap<String, BTreeMap<String, String>>, start: &String) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if next == start {
                let mut cycle = vec![node.clone()];
                while let Some(previous) = came_from.get(cycle.last().unwrap()) {
                    cycle.push((*previous).clone());
                }
                cycle.reverse();
                return Some(cycle);
            }
            if !came_from.contains_key(next) && next != start {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}

impl Source {
    fn parse(text: &str) -> Self {
        let tokens = tokens(text);
        let mut source = Source::default();
        // Inline modules around the current token, with the brace depth each one closes at.
        let mut scope: Vec<(String, usize)> = Vec::new();
        let mut depth = 0_usize;
        let mut path_attribute = None;
        let mut i = 0;
        while i < tokens.len() {
            let names = || scope.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
            match (&tokens[i], tokens.get(i + 1), tokens.get(i + 2)) {
                (Token::Punct('{'), ..) => depth += 1,
                (Token::Punct('}'), ..) => {
                    depth = depth.saturating_sub(1);
                    if scope.last().is_some_and(|(_, closes_at)| *closes_at == depth) {
                        scope.pop();
                    }
                }
                (Token::Ident(path), Some(Token::Punct('=')), Some(Token::Str(file)))
                    if path == "path" && i > 0 && tokens[i - 1] == Token::Punct('[') =>
                {
                    path_attribute = Some(file.clone());
                }
                (Token::Ident(keyword), Some(Token::Ident(name)), Some(Token::Punct(';'))) if keyword == "mod" => {
                    let path = path_attribute.take();
                    source.children.push(Child { scope: names(), name: name.clone(), path });
                }
                (Token::Ident(keyword), Some(Token::Ident(name)), Some(Token::Punct('{'))) if keyword == "mod" => {
                    scope.push((name.clone(), depth));
                    depth += 1;
                    i += 2;
                }
                // Not `impl Trait + use<'a>`.
                (Token::Ident(keyword), next, _) if keyword == "use" && next != Some(&Token::Punct('<')) => {
                    let end = tokens[i..].iter().position(|t| *t == Token::Punct(';')).map_or(tokens.len(), |n| i + n);
                    for (name, path) in use_tree(&tokens[i + 1..end]) {
                        source.uses.push((names(), path.clone()));
                        source.imports.push(Import { scope: names(), name, path });
                    }
                    i = end;
                }
                // `#[serde(with = "crate::a::f")]`
                (Token::Str(text), ..) if is_path(text) => {
                    source.uses.push((names(), text.split("::").map(str::to_owned).collect()));
                }
                (Token::Ident(first), Some(Token::PathSep), _) if first == "crate" || first == "super" => {
                    let mut path = vec![first.clone()];
                    while let (Some(Token::PathSep), Some(Token::Ident(segment))) =
                        (tokens.get(i + 1), tokens.get(i + 2))
                    {
                        path.push(segment.clone());
                        i += 2;
                    }
                    source.uses.push((names(), path));
                }
                _ => {}
            }
            i += 1;
        }
        source
    }
}

/// Whether `text` is a path from the crate or the parent module, and nothing else.
fn is_path(text: &str) -> bool {
    let mut segments = text.split("::");
    let identifier = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    matches!(segments.next(), Some("crate" | "super")) && text.contains("::") && segments.all(identifier)
}

/// The paths of a `use` tree (what follows `use`, up to `;`), each with the name it binds.
fn use_tree(tokens: &[Token]) -> Vec<(String, Vec<String>)> {
    let mut paths = Vec::new();
    let mut prefixes: Vec<Vec<String>> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut alias = None;
    let mut emitted = false;
    let mut tokens = tokens.iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            Token::Punct('{') => prefixes.push(current.clone()),
            Token::Punct(',' | '}') => {
                if !emitted && !current.is_empty() {
                    let name = alias.take().or_else(|| current.last().cloned()).unwrap_or_default();
                    paths.push((name, current.clone()));
                }
                let closing = *token == Token::Punct('}');
                current = if closing { prefixes.pop() } else { prefixes.last().cloned() }.unwrap_or_default();
                emitted = closing;
            }
            Token::Ident(keyword) if keyword == "as" => {
                if let Some(Token::Ident(name)) = tokens.next() {
                    alias = Some(name.clone());
                }
            }
            // `{self, …}` names the prefix itself.
            Token::Ident(keyword) if keyword == "self" && !current.is_empty() => emitted = false,
            Token::Ident(segment) => {
                current.push(segment.clone());
                emitted = false;
            }
            // `*` binds no one name: the path is the module it opens.
            Token::Punct('*') => alias = Some("*".to_owned()),
            _ => {}
        }
    }
    if !emitted && !current.is_empty() {
        paths.push((alias.unwrap_or_else(|| current.last().cloned().unwrap_or_default()), current));
    }
    paths
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    PathSep,
    Punct(char),
}

/// Rust source as identifiers, strings, `::` and other punctuation; comments, characters,
/// lifetimes and numbers are dropped (a path in a comment or a string uses nothing).
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let string_at = match (c, at(i + 1), at(i + 2)) {
            ('"', ..) => Some(i),
            ('b' | 'c', '"', _) => Some(i + 1),
            ('r', '"' | '#', _) | ('b' | 'c', 'r', '"' | '#') => Some(i + 1 + usize::from(c != 'r')),
            _ => None,
        };
        if let Some(start) = string_at.filter(|&start| chars[start] == '"' || raw_string(&chars, start).is_some()) {
            let (text, end) =
                if chars[start] == '"' { string(&chars, start) } else { raw_string(&chars, start).unwrap() };
            tokens.push(Token::Str(text));
            i = end;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut nesting = 0;
            loop {
                match (at(i), at(i + 1)) {
                    ('/', '*') => (nesting, i) = (nesting + 1, i + 2),
                    ('*', '/') => (nesting, i) = (nesting - 1, i + 2),
                    ('\0', _) => break,
                    _ => i += 1,
                }
                if nesting == 0 {
                    break;
                }
            }
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            // A character ('x', '\n', b'x') is skipped whole; a lifetime ('a) only its quote.
            let quote = if c == 'b' { i + 1 } else { i };
            i = match (at(quote + 1), at(quote + 2)) {
                ('\\', _) => (quote + 3..chars.len()).find(|&j| chars[j] == '\'').map_or(chars.len(), |j| j + 1),
                (_, '\'') => quote + 3,
                _ => quote + 1,
            };
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if !c.is_ascii_digit() {
                tokens.push(Token::Ident(chars[start..i].iter().collect()));
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    tokens
}

/// `"…"` from its opening quote: its text (escapes kept as written) and the index after it.
fn string(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start + 1;
    while i < chars.len() && chars[i] != '"' {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    (chars[start + 1..i.min(chars.len())].iter().collect(), i + 1)
}

/// `#…#"…"#…#` from its first `#` or quote, when it is one.
fn raw_string(chars: &[char], start: usize) -> Option<(String, usize)> {
    let hashes = chars[start..].iter().take_while(|c| **c == '#').count();
    let open = start + hashes;
    (chars.get(open) == Some(&'"')).then_some(())?;
    let closing: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    let end = (open + 1..chars.len()).find(|&i| chars[i..].starts_with(&closing)).unwrap_or(chars.len());
    Some((chars[open + 1..end].iter().collect(), end + closing.len()))
}
