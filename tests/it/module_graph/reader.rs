//! The reader under the module graph: one file's text as the modules it declares, the names it
//! imports, the paths it names and the types it gives methods to. Syntax only, no macro expansion.

use std::collections::BTreeSet;

/// What one file declares and uses. `scope` is the inline `mod x { … }` blocks around a path.
#[derive(Default)]
pub(super) struct Source {
    pub(super) children: Vec<Child>,
    pub(super) imports: Vec<Import>,
    pub(super) uses: Vec<(Vec<String>, Vec<String>)>,
    /// Paths from a name the file brings into scope (`ci::CiKind` after `use crate::ci;`), as
    /// written: what they name depends on the file's imports.
    pub(super) local_paths: Vec<(Vec<String>, Vec<String>)>,
    /// The names of the `struct`s, `enum`s, `union`s and `type`s the file declares.
    pub(super) types: BTreeSet<String>,
    /// `impl Type { … }` and `impl<…> Type<…> { … }`: methods on a type, wherever it is declared.
    pub(super) impls: Vec<Impl>,
    /// The names the file calls as a method, `x.name(…)` or `x.name::<…>`, and as
    /// `Prefix::name` the names it writes after a path segment: `Type::name`, `Self::name`.
    pub(super) called: BTreeSet<String>,
}

/// `#[path = "…"] mod name;`
pub(super) struct Child {
    pub(super) scope: Vec<String>,
    pub(super) name: String,
    pub(super) path: Option<String>,
}

/// `use path as name;` brings `name` into the file's scope.
pub(super) struct Import {
    pub(super) scope: Vec<String>,
    pub(super) name: String,
    pub(super) path: Vec<String>,
}

/// An inherent impl: the type's path as written (`Kind`, `super::Kind`), not an `impl Trait for`.
pub(super) struct Impl {
    pub(super) scope: Vec<String>,
    pub(super) path: Vec<String>,
    /// The functions and constants it declares.
    pub(super) methods: BTreeSet<String>,
}

impl Source {
    pub(super) fn parse(text: &str) -> Self {
        let tokens = tokens(text);
        let mut source = Source { called: called(&tokens), ..Source::default() };
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
                (Token::Ident(keyword), Some(Token::Ident(name)), _)
                    if matches!(keyword.as_str(), "struct" | "enum" | "union" | "type") =>
                {
                    source.types.insert(name.clone());
                }
                // An item, not `-> impl Trait` or `x: impl Trait`.
                (Token::Ident(keyword), ..)
                    if keyword == "impl"
                        && match i.checked_sub(1).map(|before| &tokens[before]) {
                            None | Some(Token::Punct(';' | '{' | '}' | ']')) => true,
                            Some(Token::Ident(before)) => before == "unsafe" || before == "default",
                            _ => false,
                        } =>
                {
                    if let Some((path, methods)) = inherent_impl(&tokens[i + 1..]) {
                        source.impls.push(Impl { scope: names(), path, methods });
                    }
                }
                (Token::Ident(first), Some(Token::PathSep), Some(Token::Ident(_))) => {
                    let mut path = vec![first.clone()];
                    while let (Some(Token::PathSep), Some(Token::Ident(segment))) =
                        (tokens.get(i + 1), tokens.get(i + 2))
                    {
                        path.push(segment.clone());
                        i += 2;
                    }
                    match first.as_str() {
                        "crate" | "super" => source.uses.push((names(), path)),
                        _ => source.local_paths.push((names(), path)),
                    }
                }
                _ => {}
            }
            i += 1;
        }
        source
    }
}

/// The type an `impl` (its tokens after `impl`) gives methods to, when it is no trait's impl and
/// the type is a path: `impl<'a, F: Fn() -> u8> a::Holder<'a, F> where F: Send {` is `a::Holder`;
/// with the names of the functions and constants its block declares.
fn inherent_impl(tokens: &[Token]) -> Option<(Vec<String>, BTreeSet<String>)> {
    let mut angles = 0_usize;
    let mut path = Vec::new();
    let mut generics_done = tokens.first() != Some(&Token::Punct('<'));
    for (i, token) in tokens.iter().enumerate() {
        let arrow = i > 0 && tokens[i - 1] == Token::Punct('-');
        match token {
            Token::Punct('<') => angles += 1,
            Token::Punct('>') if !arrow => {
                angles = angles.saturating_sub(1);
                generics_done |= angles == 0;
            }
            _ if angles > 0 => {}
            Token::Punct('{' | ';') => break,
            Token::Ident(keyword) if keyword == "where" => break,
            Token::Ident(keyword) if keyword == "for" => return None,
            // `impl dyn Trait`, `impl $ty` in a macro: no type this reader can name.
            Token::Ident(keyword) if keyword == "dyn" => return None,
            Token::Ident(segment) if generics_done && (path.is_empty() || tokens[i - 1] == Token::PathSep) => {
                path.push(segment.clone());
            }
            Token::PathSep => {}
            _ if generics_done => return None,
            _ => {}
        }
    }
    let block = tokens.iter().position(|token| *token == Token::Punct('{'))?;
    let mut methods = BTreeSet::new();
    let mut depth = 0_usize;
    for (i, token) in tokens.iter().enumerate().skip(block) {
        match (token, tokens.get(i + 1)) {
            (Token::Punct('{'), _) => depth += 1,
            (Token::Punct('}'), _) if depth == 1 => break,
            (Token::Punct('}'), _) => depth -= 1,
            (Token::Ident(keyword), Some(Token::Ident(name)))
                if depth == 1 && (keyword == "fn" || keyword == "const") && name != "fn" =>
            {
                methods.insert(name.clone());
            }
            _ => {}
        }
    }
    (!path.is_empty()).then_some((path, methods))
}

/// The names called as a method (`.name(`, `.name::<`), and those named after a path segment,
/// with it (`Type::name`): a like-named function of another type is not a call of this one's.
fn called(tokens: &[Token]) -> BTreeSet<String> {
    let mut called = BTreeSet::new();
    for (i, token) in tokens.iter().enumerate().skip(1) {
        let Token::Ident(name) = token else { continue };
        let call = matches!(tokens.get(i + 1), Some(Token::Punct('(') | Token::PathSep));
        if tokens[i - 1] == Token::PathSep {
            if let Some(Token::Ident(prefix)) = i.checked_sub(2).and_then(|at| tokens.get(at)) {
                called.insert(format!("{prefix}::{name}"));
            }
        } else if tokens[i - 1] == Token::Punct('.') && call {
            called.insert(name.clone());
        }
    }
    called
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
