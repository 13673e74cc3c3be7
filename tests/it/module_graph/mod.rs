//! "No module imports one that imports it back" (docs/design.md, Layout), checked. Reads every file of
//! `src/` reached from `lib.rs`, builds the graph of which file uses which (`use crate::…`,
//! `use super::…`, inline `crate::a::b` and `super::a` paths, and a string that is such a path, as
//! serde's `with = "crate::a::f"`; each resolved to the deepest module that is a file, through a
//! `use` that re-exports it), and refuses a cycle:
//! - among the top-level modules (`identity`, `policy`, `store`, `api` …; a module with its own
//!   children counted as one);
//! - among the files (and sub-folders) of any one folder. A folder's `mod.rs` is their parent,
//!   not one of them: children using what it declares is no cycle.
//!
//! A use of a type also uses another module that gives it methods (`impl Type { … }`, not an
//! `impl Trait for Type`) when it calls one: that runs the module's code though no import names
//! it. A file that names the type (imports it, or writes a path to it) and calls a function or
//! constant of such an impl by its name (`.name(`, `Type::name`) gets an edge to the impl's file,
//! when that is not the type's own, labelled `Type (methods in src/…: name)`. Names are matched,
//! not types: a call of a like-named method of another type counts too. A file that only calls
//! the methods on a value it was handed, never naming the type, is not seen.

mod reader;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use reader::{Impl, Source};

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

#[test]
fn a_use_reaches_the_module_that_gives_its_type_methods() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "pub mod kind; pub mod a; pub mod b; pub mod c; pub mod d;"),
        ("kind.rs", "pub enum Kind { A } impl Kind { pub fn name(self) {} }"),
        // Methods on another module's type, that run code of `b`.
        ("a.rs", "use crate::kind::Kind; impl Kind { pub fn a(self) -> crate::b::B { todo!() } }"),
        // Imports nothing of `a`, and runs its code.
        ("b.rs", "pub struct B; pub fn f(kind: crate::kind::Kind) { kind.a(); }"),
        // A trait's impl: its methods are the trait's, reached through the trait.
        ("c.rs", "use crate::{d, kind}; impl std::fmt::Display for kind::Kind { fn fmt() {} } fn g() { d::h(); }"),
        ("d.rs", "use crate::kind; pub fn h(kind: kind::Kind, f: F) { kind.name(); kind.fmt(f); }"),
    ]);
    let edges = graph.edges();
    assert_eq!(edges.get(&("src/b.rs", "src/a.rs")).map(String::as_str), Some("Kind (methods in src/a.rs: a)"));
    assert!(!edges.contains_key(&("src/d.rs", "src/c.rs")), "{edges:?}");
    // Names `Kind` but calls none of the methods `a` gives it.
    assert!(!edges.contains_key(&("src/d.rs", "src/a.rs")), "{edges:?}");

    let cycles = graph.cycles(&edges);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("a → b → a\n"), "{}", cycles[0]);
    assert!(cycles[0].contains("src/b.rs uses Kind (methods in src/a.rs: a)"), "{}", cycles[0]);
}

#[test]
fn an_impl_names_the_type_it_gives_methods_to() {
    let source = Source::parse(
        "impl<'a, F: Fn() -> u8> a::Holder<'a, F> where F: for<'b> Fn(&'b u8) {} \
         impl<T> Trait<T> for Holder<T> {} impl !Send for Holder {} impl dyn Any {} \
         fn f(x: impl Sized) -> impl Iterator<Item = u8> { todo!() } \
         #[cfg(test)] mod tests { unsafe impl Kind { const A: u8 = 1; pub const fn b() { fn inner() {} } } } \
         macro_rules! m { ($t:ty) => { impl $t {} } }",
    );
    let impls: Vec<_> = source.impls.iter().map(|impl_| (impl_.scope.join("::"), impl_.path.join("::"))).collect();
    assert_eq!(impls, [("".to_owned(), "a::Holder".to_owned()), ("tests".to_owned(), "Kind".to_owned())]);
    assert_eq!(Vec::from_iter(&source.impls[1].methods), ["A", "b"]);
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

    /// Every use of another file: `(file, file it uses)` with the first path that says so; then
    /// each use of a type reaching the other files that give it methods.
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
        let methods = self.methods();
        for (index, file) in self.files.iter().enumerate() {
            for (type_file, name) in self.types_named(index) {
                let elsewhere = methods.get(&(type_file, name.clone())).into_iter().flatten();
                for (&methods_file, declared) in elsewhere.filter(|&(&at, _)| at != type_file && at != index) {
                    let calls = |method: &String| {
                        let called = &file.source.called;
                        called.contains(method)
                            || called.contains(&format!("{name}::{method}"))
                            || called.contains(&format!("Self::{method}"))
                    };
                    let Some(called) = declared.iter().find(|method| calls(method)) else {
                        continue;
                    };
                    let methods_path = self.files[methods_file].path.as_str();
                    let edge = (file.path.as_str(), methods_path);
                    edges.entry(edge).or_insert_with(|| format!("{name} (methods in {methods_path}: {called})"));
                }
            }
        }
        edges
    }

    /// For each type, `(the file that declares it, its name)`: the files with an inherent impl of
    /// it, each with the functions and constants it declares there.
    fn methods(&self) -> BTreeMap<(usize, String), BTreeMap<usize, BTreeSet<String>>> {
        let mut methods: BTreeMap<_, BTreeMap<usize, BTreeSet<String>>> = BTreeMap::new();
        for (index, file) in self.files.iter().enumerate() {
            for impl_ in &file.source.impls {
                let Some(type_) = self.impl_type(index, impl_) else { continue };
                methods.entry(type_).or_default().entry(index).or_default().extend(impl_.methods.iter().cloned());
            }
        }
        methods
    }

    /// The type an impl gives methods to, as `(file that declares it, name)`: through the file's
    /// import of that name, else declared in the file itself, else reached through a glob import
    /// (`use super::*`) of a file that declares it; failing all, the file itself, whose macros
    /// may generate it.
    fn impl_type(&self, index: usize, impl_: &Impl) -> Option<(usize, String)> {
        let file = &self.files[index];
        let context = [&file.module[..], &impl_.scope[..]].concat();
        let [name] = &impl_.path[..] else {
            return self.resolve_item(&context, &impl_.path, 0).and_then(|(file, name)| Some((file, name?)));
        };
        let imports = file.source.imports.iter().filter(|import| import.scope == impl_.scope);
        if let Some(import) = imports.clone().find(|import| &import.name == name) {
            return self.resolve_item(&context, &import.path, 0).and_then(|(file, name)| Some((file, name?)));
        }
        if file.source.types.contains(name) {
            return Some((index, name.clone()));
        }
        let declares = |other: usize| {
            let source = &self.files[other].source;
            source.types.contains(name) || source.imports.iter().any(|import| &import.name == name)
        };
        let through_glob = imports.filter(|import| import.name == "*").find_map(|glob| {
            let path = [&glob.path[..], std::slice::from_ref(name)].concat();
            let (other, _) = self.resolve_item(&context, &path, 0)?;
            declares(other).then_some(other)
        });
        Some((through_glob.unwrap_or(index), name.clone()))
    }

    /// The types a file names, as `(file that declares it, name)`: each path it uses, and each
    /// path it writes from a name it imports (`ci::CiKind` after `use crate::ci;`).
    fn types_named(&self, index: usize) -> BTreeSet<(usize, String)> {
        let file = &self.files[index];
        let from_imports = file.source.local_paths.iter().filter_map(|(scope, path)| {
            let imports = file.source.imports.iter().filter(|import| &import.scope == scope);
            let import = imports.filter(|import| import.name != "*").find(|import| import.name == path[0])?;
            Some((scope, [&import.path[..], &path[1..]].concat()))
        });
        let uses = file.source.uses.iter().map(|(scope, path)| (scope, path.clone()));
        uses.chain(from_imports)
            .filter_map(|(scope, path)| {
                let context = [&file.module[..], &scope[..]].concat();
                let (file, name) = self.resolve_item(&context, &path, 0)?;
                Some((file, name?))
            })
            .collect()
    }

    /// The file a path names: the deepest module of the path that is a file, or, when the next
    /// segment is a name that file imports, the file that import names.
    fn resolve(&self, context: &[String], path: &[String], depth: usize) -> Option<usize> {
        self.resolve_item(context, path, depth).map(|(file, _)| file)
    }

    /// `resolve`, with the name the path reaches in that file, if it goes past the file's module.
    fn resolve_item(&self, context: &[String], path: &[String], depth: usize) -> Option<(usize, Option<String>)> {
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
        let name = absolute.get(depth_of_file);
        let re_exported = name.and_then(|name| {
            let imports = self.files[file].source.imports.iter();
            let import = imports.filter(|import| import.scope.is_empty()).find(|import| &import.name == name)?;
            let path = [&import.path[..], &absolute[depth_of_file + 1..]].concat();
            (depth < 8).then(|| self.resolve_item(&self.files[file].module, &path, depth + 1)).flatten()
        });
        Some(re_exported.unwrap_or((file, name.cloned())))
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
