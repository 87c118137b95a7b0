//! The module layers of `src/` (docs/development.md, *Where things live*):
//! the top-level modules import one another without a cycle, the domain
//! (`model`) imports nothing of indexq, and only `ledger` holds SQL. Read
//! from the source: a `use crate::x` (or a `crate::x::` path) outside test
//! code is an import of `x`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → the top-level modules its non-test code names.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let top = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
        if top == "main" || top == "lib" || is_test_code(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let names = graph.entry(top.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let name: String = code[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if !name.is_empty() && name != top {
                names.insert(name);
            }
        }
    }
    graph
}

/// Files that only tests compile (`#[cfg(test)] mod …;`).
fn is_test_code(rel: &str) -> bool {
    rel.contains("/tests/") || rel.ends_with("story.rs") || rel.ends_with("test_support.rs")
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
    for pure in ["classify", "model", "output"] {
        assert!(!graph[pure].contains("ledger"), "{pure} imports the ledger: {:?}", graph[pure]);
    }
}

#[test]
fn only_the_ledger_knows_sql() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
