//! Sitemaps as the world writes them (issue 43): every file of the corpus
//! in `tests/fixtures/sitemaps/` (third-party sitemaps, feeds and text
//! sitemaps, each listed with its origin in the README there) read through
//! the binary with `submit --dry-run --json --sitemap FILE`, its URLs
//! compared with the set written beside it (`NAME.expected`, one URL a
//! line) and, when `NAME.problems` is there, its problems with those lines
//! (each a piece of one problem's place and message, in order). The URLs
//! are no property's: each comes back `invalid` with reason `no_property`,
//! which is how a dry run shows every URL it read.

use crate::support::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const NOW: &str = "2026-12-03T09:00:00Z";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sitemaps")
}

/// The files with a `.expected` beside them, in this folder and below.
fn entry_points(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            entry_points(&path, found);
        } else if path.extension().is_some_and(|e| e == "expected") {
            found.push(path.with_extension(""));
        }
    }
}

/// `FILE.ext`, beside `FILE`.
fn beside(file: &Path, ext: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(format!(".{ext}"));
    PathBuf::from(name)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_corpus_file_gives_the_urls_written_beside_it() {
    let sb = Sandbox::new();
    let mut files = Vec::new();
    entry_points(&corpus(), &mut files);
    assert!(files.len() >= 20, "the corpus is there: {files:?}");
    let mut failures = Vec::new();
    for file in &files {
        let name = file.strip_prefix(corpus()).unwrap().display().to_string();
        let done = sb.indexq(&["--json", "submit", "--dry-run", "--sitemap", file.to_str().unwrap()]).now(NOW).output();
        let doc = done.submit_doc();
        let read: BTreeSet<String> =
            doc.results.iter().filter(|r| r.reason == "no_property").map(|r| r.url.clone()).collect();
        let expected: BTreeSet<String> = lines(&beside(file, "expected")).into_iter().collect();
        if read != expected {
            failures.push(format!("{name}: read {read:#?}, expected {expected:#?}"));
        }
        let problems: Vec<String> = doc
            .results
            .iter()
            .filter(|r| r.reason != "no_property")
            .map(|r| format!("{} {}: {}", r.source.clone().unwrap_or_default(), r.reason, r.message))
            .collect();
        let said = beside(file, "problems");
        let wanted = if said.exists() { lines(&said) } else { Vec::new() };
        let matches =
            problems.len() == wanted.len() && problems.iter().zip(&wanted).all(|(p, w)| p.contains(w.as_str()));
        if !matches {
            failures.push(format!("{name}: problems {problems:#?}, expected {wanted:#?}"));
        }
        let code = if problems.is_empty() && read.is_empty() { 0 } else { 3 };
        if done.code != code {
            failures.push(format!("{name}: exit code {} (expected {code}): {}", done.code, done.stderr));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The hostile index's children are never read where they point: nothing
/// from `/etc/hostname` becomes a URL (the `.problems` file says how each
/// is refused).
#[test]
fn a_hostile_local_index_reads_nothing_outside_its_folder() {
    let sb = Sandbox::new();
    let index = corpus().join("hostile/index.xml");
    let done =
        sb.indexq(&["--json", "submit", "--dry-run", "--sitemap", index.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.submit_doc();
    assert_eq!(doc.results.len(), 2, "{:#?}", doc.results);
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    for r in &doc.results {
        assert_eq!(r.reason, "sitemap", "{r:?}");
        assert!(!r.message.contains("/etc/hostname:") && !r.url.starts_with("/etc/"), "{r:?}");
        if !hostname.trim().is_empty() {
            assert!(!r.url.contains(hostname.trim()) && !r.message.contains(hostname.trim()), "{r:?}");
        }
    }
}
