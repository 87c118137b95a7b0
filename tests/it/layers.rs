//! The module layers of `src/` (docs/development.md, *Where things live*):
//! the top-level modules import one another without a cycle, the domain
//! (`model`) imports nothing of indexq, the pure layers and the engines do
//! not import the storage layer, and only `ledger` holds SQL.
//!
//! Read from the source, outside test code and without comments or
//! literals: every `use` declaration is parsed as a tree (`use
//! crate::{a, b::{c, self}}`, renames, globs, over many lines), and every
//! path in code that starts with `crate::` or climbs out of its top-level
//! module with `super::`. A path into another top-level module `x` is an
//! import of `x`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which top-level modules may not import which.
const FORBIDDEN: &[(&str, &str)] =
    &[("classify", "ledger"), ("model", "ledger"), ("output", "ledger"), ("engines", "ledger")];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Top-level module → the top-level modules its non-test code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = src();
    let tests_only = test_only_files(&src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src).into_iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let module = module_path(&rel);
        let Some(top) = module.first().cloned() else { continue };
        if top == "main" || tests_only.contains(&file) {
            continue;
        }
        let code = without_test_items(&code_only(&std::fs::read_to_string(&file).unwrap()));
        let names = graph.entry(top.clone()).or_default();
        for path in paths_in(&tokens(&code)) {
            if let Some(name) = top_module_of(&module, &path) {
                if name != top {
                    names.insert(name);
                }
            }
        }
    }
    graph
}

/// The module a file under `src/` is: `a/b.rs` and `a/b/mod.rs` are
/// `a::b`; `lib.rs` the crate root (empty).
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] {
        parts.pop();
    }
    parts
}

/// Files that only tests compile: declared `#[cfg(test)] mod NAME;`, and
/// every file under them.
fn test_only_files(src: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in rust_files(src).into_iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
        let text = code_only(&std::fs::read_to_string(&file).unwrap());
        let name = file.file_name().unwrap().to_string_lossy();
        let dir = match name.as_ref() {
            "mod.rs" | "lib.rs" | "main.rs" => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        let t = tokens(&text);
        for (i, window) in t.windows(8).enumerate() {
            let attr: Vec<&str> = window[..7].iter().map(String::as_str).collect();
            if attr == ["#", "[", "cfg", "(", "test", ")", "]"] && window[7] == "mod" {
                if let (Some(module), Some(end)) = (t.get(i + 8), t.get(i + 9)) {
                    if end == ";" {
                        out.insert(dir.join(format!("{module}.rs")));
                        out.insert(dir.join(module).join("mod.rs"));
                        if dir.join(module).is_dir() {
                            out.extend(rust_files(&dir.join(module)));
                        }
                    }
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs" || e == "sql") {
            files.push(path);
        }
    }
    files
}

// ---------------------------------------------------------------------------
// Reading Rust: just enough of it for paths.

/// `text` without comments (line, block — nested — and doc), and with every
/// string, byte string, raw string and character literal emptied: what is
/// left is code. Lifetimes stay.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        let after_ident = i > 0 && ident(c[i - 1]);
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some((start, hashes)) = raw_string_at(&c, i) {
            // A raw string: r"…", r#"…"#, br##"…"##.
            i += start + hashes + 1;
            let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            while i < c.len() && !c[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
            out.push_str("\"\"");
        } else if at(0) == '"' || (!after_ident && at(0) == 'b' && at(1) == '"') {
            i += if at(0) == 'b' { 2 } else { 1 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if at(0) == '\'' || (!after_ident && at(0) == 'b' && at(1) == '\'') {
            let q = if at(0) == 'b' { i + 1 } else { i };
            let next = c.get(q + 1).copied().unwrap_or('\0');
            if next == '\\' {
                // '\n', '\'', '\u{1F600}'
                let mut j = q + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if c.get(q + 2) == Some(&'\'') {
                i = q + 3;
                out.push_str("' '");
            } else {
                // A lifetime or a label.
                out.push('\'');
                i = q + 1;
            }
        } else {
            out.push(at(0));
            i += 1;
        }
    }
    out
}

/// Where a raw string starts at `c[i]` (`r`, or `br`, not inside an
/// identifier): the prefix's length and the number of `#`.
fn raw_string_at(c: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let start = match (c.get(i), c.get(i + 1)) {
        (Some('r'), _) => 1,
        (Some('b'), Some('r')) => 2,
        _ => return None,
    };
    let hashes = c[i + start..].iter().take_while(|&&h| h == '#').count();
    (c.get(i + start + hashes) == Some(&'"')).then_some((start, hashes))
}

/// `code` without the items behind `#[cfg(test)]` (a `mod tests { … }`, a
/// `mod x;`, a `fn`, a `use`, a `const …;`).
fn without_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let mut depth = 0i32;
        let mut end = item.len();
        let mut chars = item.char_indices();
        while let Some((k, ch)) = chars.next() {
            match ch {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                '{' if depth == 0 => {
                    let mut braces = 1;
                    end = item.len();
                    for (k, ch) in chars.by_ref() {
                        match ch {
                            '{' => braces += 1,
                            '}' => braces -= 1,
                            _ => {}
                        }
                        if braces == 0 {
                            end = k + 1;
                            break;
                        }
                    }
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Code as tokens: identifiers and keywords (`$crate` as `crate`, `r#x` as
/// `x`), `::`, and every other character that is not white space.
fn tokens(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if word == "r" && c.get(i) == Some(&'#') {
                i += 1;
                continue;
            }
            out.push(word);
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else if ch.is_whitespace() || (ch == '$' && c[i + 1..].starts_with(&['c', 'r', 'a', 't', 'e'])) {
            // `$crate` is `crate`.
            i += 1;
        } else {
            out.push(ch.to_string());
            i += 1;
        }
    }
    out
}

/// Every path in `tokens` that can name another module: each leaf of each
/// `use` tree (a group's `self` is the path before the group), and each
/// path in code that starts with `crate` or `super`.
fn paths_in(tokens: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "use" {
            i += 1;
            use_tree(tokens, &mut i, &[], &mut out);
            continue;
        }
        if (tokens[i] == "crate" || tokens[i] == "super") && tokens.get(i + 1).is_some_and(|t| t == "::") {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|t| t == "::") && tokens.get(j + 1).is_some_and(|t| is_ident(t)) {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            out.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn is_ident(token: &str) -> bool {
    token.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// One use tree from `tokens[*i]`, under `prefix`: its leaves into `out`;
/// `*i` ends after it (after a group's `}`, or at the `,` / `;` that follows).
fn use_tree(tokens: &[String], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    if tokens.get(*i).is_some_and(|t| t == "::") {
        *i += 1;
    }
    while let Some(token) = tokens.get(*i) {
        match token.as_str() {
            "{" => {
                *i += 1;
                while tokens.get(*i).is_some_and(|t| t != "}") {
                    use_tree(tokens, i, &path, out);
                    if tokens.get(*i).is_some_and(|t| t == ",") {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "*" => {
                *i += 1;
                out.push(path);
                return;
            }
            word if is_ident(word) => {
                // In a group, `self` is the path before it.
                if !(word == "self" && path.len() == prefix.len() && !prefix.is_empty()) {
                    path.push(word.to_string());
                }
                *i += 1;
                if tokens.get(*i).is_some_and(|t| t == "as") {
                    *i += 2;
                }
                if tokens.get(*i).is_some_and(|t| t == "::") {
                    *i += 1;
                    continue;
                }
                out.push(path);
                return;
            }
            // `;`, `,`, `}`: the end of a tree (an empty group's path names nothing).
            _ => return,
        }
    }
}

/// The top-level module that `path`, written in `module`, leads into:
/// `crate::x…` is `x`; `super::…` climbs from `module` (one step a
/// `super`) and, when it leaves the top-level module, leads to the name
/// after; any other path stays in `module` or leaves the crate.
fn top_module_of(module: &[String], path: &[String]) -> Option<String> {
    match path.first().map(String::as_str) {
        Some("crate") => path.get(1).cloned(),
        Some("super") => {
            let up = path.iter().take_while(|s| *s == "super").count();
            if up < module.len() {
                module.first().cloned()
            } else {
                path.get(up).cloned()
            }
        }
        Some("self") => module.first().cloned(),
        _ => None,
    }
}

/// A cycle through `from`, as the path that closes it.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![(from.to_string(), vec![from.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == from {
                return Some([path.clone(), vec![next.clone()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), [path.clone(), vec![next.clone()]].concat()));
            }
        }
    }
    None
}

#[test]
fn modules_import_one_another_without_a_cycle() {
    let graph = imports();
    assert!(graph.len() > 10 && graph["commands"].contains("ledger"), "the source was read: {graph:?}");
    for module in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, module) {
            panic!("an import cycle: {}", cycle.join(" → "));
        }
    }
    assert_eq!(graph["model"], BTreeSet::new(), "the model imports nothing of indexq");
    let broken: Vec<String> = FORBIDDEN
        .iter()
        .filter(|(from, to)| graph[*from].contains(*to))
        .map(|(from, to)| format!("{from} imports {to}: {:?}", graph[*from]))
        .collect();
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn only_the_ledger_knows_sql() {
    let src = src();
    let sql = ["SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "CREATE TABLE"];
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if rel.starts_with("ledger/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for word in sql {
            assert!(!text.contains(word), "{rel} holds SQL ({word:?})");
        }
    }
}

// ---------------------------------------------------------------------------
// The reader itself.

/// The top-level modules that `source`, as the file `rel`, imports.
fn imports_of(rel: &str, source: &str) -> BTreeSet<String> {
    let module = module_path(rel);
    paths_in(&tokens(&without_test_items(&code_only(source))))
        .iter()
        .filter_map(|p| top_module_of(&module, p))
        .filter(|m| Some(m) != module.first())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn use_trees_are_read_to_their_leaves() {
    let leaves =
        |source: &str| -> Vec<String> { paths_in(&tokens(&code_only(source))).iter().map(|p| p.join("::")).collect() };
    assert_eq!(leaves("use crate::ledger::Ledger;"), ["crate::ledger::Ledger"]);
    assert_eq!(leaves("use crate::{ledger, model::Class};"), ["crate::ledger", "crate::model::Class"]);
    assert_eq!(
        leaves("pub(crate) use crate::{a::{self, b as c, d::{e, f::*}}, g::{}, h};"),
        ["crate::a", "crate::a::b", "crate::a::d::e", "crate::a::d::f", "crate::h"]
    );
    assert_eq!(
        leaves("use crate::{\n    ledger::{\n        self,\n        Ledger,\n    },\n};"),
        ["crate::ledger", "crate::ledger::Ledger"]
    );
    assert_eq!(leaves("use ::std::fmt; use super::{x, super::y};"), ["std::fmt", "super::x", "super::super::y"]);
    assert_eq!(leaves("use crate::model as m;"), ["crate::model"]);
    assert_eq!(leaves("use crate::*;"), ["crate"]);
    assert_eq!(leaves("let x = crate::ledger::open(); pub(crate) fn f() {}"), ["crate::ledger::open"]);
    assert_eq!(leaves("fn f() -> $crate::model::Class { r#match }"), ["crate::model::Class"]);
}

#[test]
fn comments_and_literals_are_not_code() {
    let code = code_only(
        "// use crate::ledger;\n/* crate::a /* nested crate::b */ crate::c */ let s = \"crate::d \\\" crate::e\";\n\
         let r = r#\"crate::f \" crate::g\"#; let c = '\"'; let q = '\\''; fn f<'a>(x: &'a str) -> crate::h::X {}\n\
         /// crate::i\nlet b = b\"crate::j\"; let br = br\"crate::k\";",
    );
    let paths: Vec<String> = paths_in(&tokens(&code)).iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["crate::h::X"], "{code}");
    assert!(code.contains("<'a>(x: &'a str)"), "lifetimes stay: {code}");
}

#[test]
fn test_items_are_left_out() {
    let code =
        "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { if x { crate::c::d(); } }\n}\n\
                #[cfg(test)]\nuse crate::e::{f, g};\n#[cfg(test)]\npub const N: [u8; 2] = [crate::h::ONE; 2];\n\
                #[cfg(test)]\nmod story;\nuse crate::i;";
    assert_eq!(imports_of("x.rs", code), set(&["a", "i"]));
}

#[test]
fn super_paths_that_leave_the_top_level_module_are_imports() {
    // src/commands/submit/send.rs is commands::submit::send.
    let rel = "commands/submit/send.rs";
    assert_eq!(imports_of(rel, "use super::super::super::ledger::Ledger;"), set(&["ledger"]));
    assert_eq!(imports_of(rel, "use super::{intake, super::open_ledger};"), set(&[]));
    assert_eq!(imports_of(rel, "fn f() { super::super::super::model::x() }"), set(&["model"]));
    assert_eq!(imports_of("engines/mod.rs", "use super::{ledger::Claim, model};"), set(&["ledger", "model"]));
    assert_eq!(imports_of("engines/bing.rs", "use super::{digest, Engine};"), set(&[]));
    assert_eq!(imports_of("files.rs", "use self::x::y; use std::fs;"), set(&[]));
    assert_eq!(imports_of("engines/bing.rs", "use crate::{self as c};"), set(&[]));
}

#[test]
fn a_grouped_import_of_a_forbidden_layer_is_found() {
    let graph = |rel: &str, source: &str| imports_of(rel, source);
    let found = graph("engines/indexnow.rs", "use crate::{classify, ledger::{self, Ledger}};\n");
    assert!(found.contains("ledger"), "{found:?}");
    let found = graph("output/summary.rs", "use crate::{\n    model::Class,\n    ledger as store,\n};\n");
    assert!(found.contains("ledger"), "{found:?}");
}
