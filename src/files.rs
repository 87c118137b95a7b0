//! Files indexq writes for other programs to read (the metrics for
//! node_exporter's textfile collector, the HTML report): written whole or
//! not at all — to a temporary file in the same directory, then renamed over
//! the target, so a reader never sees half a file.

use anyhow::Context as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically. The file is readable by others
/// (mode 0644, less the umask): a collector or a web server reads it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = temporary_beside(path).with_context(|| format!("cannot write {}", path.display()))?;
    let written = write_new(&tmp, bytes).and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// `DIR/.NAME.PID.tmp`: in the target's directory (a rename does not cross
/// file systems), hidden, and not ending in `.prom` (the textfile collector
/// reads only `*.prom`).
fn temporary_beside(path: &Path) -> anyhow::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| anyhow::anyhow!("not a file name"))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Ok(dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id())))
}

fn write_new(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A leftover of a run that died with this pid.
    let _ = fs::remove_file(tmp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    let mut file = options.open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("indexq.prom");
        write_atomically(&path, b"first\n").unwrap();
        write_atomically(&path, b"second\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second\n");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("indexq.prom")]);
        let missing = dir.path().join("no-such-dir").join("indexq.prom");
        let err = write_atomically(&missing, b"x").unwrap_err();
        assert!(format!("{err:#}").contains("no-such-dir"), "{err:#}");
    }
}
