//! Hostile local state: a ledger that is truncated, not a database, from a
//! newer schema, read-only or on a full disk; a config file that is a
//! directory, empty, binary or 10 MB; a clock that goes backwards. Each gets
//! a clear error naming the file (or a warning), the right exit code, and no
//! request is sent without its reservation. Read-only and full disks are
//! small tmpfs mounts: those two tests need root, so they are ignored with that reason
//! (`cargo test -- --include-ignored` as root runs them; `.ci/run` does).

use crate::support::mock::MockResponse;
use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const NOW: &str = "2026-12-03T09:00:00Z";

/// A tmpfs mounted for one test, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn new(dir: &Path, size: &str) -> Mount {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(dir).status();
        assert!(ok.is_ok_and(|s| s.success()), "mounting a tmpfs needs root: run this test as root");
        Mount(dir.to_path_buf())
    }

    fn read_only(&self) {
        let ok = Command::new("mount").args(["-o", "remount,ro"]).arg(&self.0).status().unwrap();
        assert!(ok.success());
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn ledger_in(dir: &Path) -> PathBuf {
    dir.join("ledger.db")
}

#[test]
fn a_truncated_ledger_is_exit_1_naming_the_file() {
    let sb = Sandbox::new();
    let names: Vec<String> = (0..300).map(|i| format!("/p{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("urls.txt", &refs);
    sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(0);
    let sent = sb.engine.requests().len();
    let file = std::fs::OpenOptions::new().write(true).open(sb.ledger()).unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len / 3).unwrap();
    drop(file);
    let more = sb.urls("more.txt", &["/new"]);
    let done = sb.indexq(&["submit", more.to_str().unwrap()]).now(NOW).output().code(1);
    assert!(done.stderr.contains(&sb.ledger().display().to_string()), "{}", done.stderr);
    assert!(done.stderr.contains("hint:"), "{}", done.stderr);
    assert_eq!(sb.engine.requests().len(), sent, "nothing sent");
}

#[test]
fn a_ledger_from_a_newer_indexq_says_upgrade() {
    let sb = Sandbox::new();
    sb.indexq(&["status"]).now(NOW).output().code(0);
    let conn = rusqlite::Connection::open(sb.ledger()).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert!(done.stderr.contains("schema version 99"), "{}", done.stderr);
    assert!(done.stderr.contains("upgrade indexq"), "{}", done.stderr);
    assert!(sb.engine.requests().is_empty());
}

#[test]
#[ignore = "needs root (tmpfs mounts); .ci/run runs it"]
fn a_read_only_ledger_is_exit_1_and_sends_nothing() {
    let sb = Sandbox::new();
    let mount = Mount::new(&sb.dir.path().join("ro"), "4m");
    let ledger = ledger_in(&mount.0);
    let list = sb.urls("urls.txt", &["/a"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).env("INDEXQ_LEDGER", &ledger).now(NOW).output().code(0);
    mount.read_only();
    let more = sb.urls("more.txt", &["/b"]);
    let done = sb.indexq(&["submit", more.to_str().unwrap()]).env("INDEXQ_LEDGER", &ledger).now(NOW).output().code(1);
    assert!(done.stderr.contains(&ledger.display().to_string()), "{}", done.stderr);
    assert_eq!(sb.engine.requests().len(), 1, "only the first run's request");
}

#[test]
#[ignore = "needs root (tmpfs mounts); .ci/run runs it"]
fn a_full_disk_is_exit_1_with_the_fix_and_sends_nothing_unreserved() {
    let sb = Sandbox::new();
    let mount = Mount::new(&sb.dir.path().join("full"), "1m");
    let ledger = ledger_in(&mount.0);
    let names: Vec<String> = (0..20_000).map(|i| format!("/a-rather-long-path-to-fill-the-disk/{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("urls.txt", &refs);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).env("INDEXQ_LEDGER", &ledger).now(NOW).output().code(1);
    assert!(done.stderr.contains("full"), "{}", done.stderr);
    assert!(done.stderr.contains("hint: free space"), "{}", done.stderr);
    assert!(sb.engine.requests().is_empty(), "nothing is sent before every input URL is in the ledger");
}

/// A disk too full for a new ledger's tables: the full disk's hint, not a
/// damaged file's.
#[test]
#[ignore = "needs root (tmpfs mounts); .ci/run runs it"]
fn a_disk_too_full_for_a_new_ledger_says_free_space() {
    let sb = Sandbox::new();
    let mount = Mount::new(&sb.dir.path().join("full"), "256k");
    let ledger = ledger_in(&mount.0);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).env("INDEXQ_LEDGER", &ledger).now(NOW).output().code(1);
    assert!(done.stderr.contains("full"), "{}", done.stderr);
    assert!(done.stderr.contains("hint: free space"), "{}", done.stderr);
    assert!(!done.stderr.contains("damaged"), "{}", done.stderr);
    assert!(sb.engine.requests().is_empty());
}

#[test]
fn config_files_that_are_not_configs_are_exit_2_with_the_reason() {
    let sb = Sandbox::new();
    let dir = sb.dir.path().join("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let empty = sb.file("empty.toml", "");
    let binary = sb.dir.path().join("binary.toml");
    std::fs::write(&binary, [0u8, 159, 146, 150, 0xff, 0xfe, 7, 0]).unwrap();
    let huge = sb.dir.path().join("huge.toml");
    std::fs::write(&huge, "# x\n".repeat(2_700_000)).unwrap();
    for (path, reason) in
        [(&dir, "Is a directory"), (&empty, "no [[property]]"), (&binary, "cannot read"), (&huge, "at most")]
    {
        let done = sb.indexq(&["--config", path.to_str().unwrap(), "status"]).now(NOW).output().code(2);
        assert!(done.stderr.contains(reason), "{}: {}", path.display(), done.stderr);
    }
}

#[test]
fn a_clock_that_goes_backwards_warns_and_never_double_spends() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 1".into();
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let first = sb.urls("first.txt", &["/a", "/b"]);
    sb.indexq(&["submit", first.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output().code(0);
    sb.indexq(&["submit"]).now("2026-12-04T09:00:00Z").output().code(0);
    assert_eq!(sb.received_urls().len(), 2, "one a day");
    // Back to the first day: its window is spent already.
    let more = sb.urls("more.txt", &["/c"]);
    let done = sb.indexq(&["submit", more.to_str().unwrap()]).now("2026-12-03T10:00:00Z").output().code(0);
    assert!(done.stderr.contains("earlier than a previous run"), "{}", done.stderr);
    assert_eq!(sb.received_urls().len(), 2, "no window reopened, nothing spent twice");
}
