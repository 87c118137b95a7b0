//! Files indexq writes for other programs to read (the metrics for
//! node_exporter's textfile collector, the HTML report): written whole or
//! not at all — to a temporary file in the same directory, then renamed over
//! the target, so a reader never sees half a file.
//!
//! A rename replaces whatever has the target's name: so only a regular
//! file (or no file) is ever replaced — never a device such as `/dev/null`,
//! a FIFO, a socket or a directory, nor what a symbolic link leads to when
//! that is one of those. `check_target` says so before a run does anything
//! (`submit --metrics-file`), and the write checks again just before the
//! rename. A symbolic link to a regular file is followed: the file it
//! leads to is replaced, and the link stays.

use anyhow::Context as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a file cannot be written where asked (the path is not in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Whether `write_atomically` may write `path`: it is a regular file (or a
/// symbolic link to one), or nothing yet in a folder that exists. Refused:
/// a device, a FIFO, a socket, a directory (or a link to one), a link that
/// leads nowhere, and a path whose folder does not exist (it is not made).
pub fn check_target(path: &Path) -> Result<(), Refused> {
    let link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) => {
            let what = kind(&meta.file_type());
            Err(Refused(match link {
                true => format!(
                    "it is a symbolic link to {what} ({}), not to a regular file; {REPLACED}",
                    fs::canonicalize(path).unwrap_or_default().display()
                ),
                false => format!("it is {what}, not a regular file; {REPLACED}"),
            }))
        }
        Err(_) if link => Err(Refused(format!(
            "it is a symbolic link to {}, which does not exist",
            fs::read_link(path).unwrap_or_default().display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = folder_of(path);
            match fs::metadata(dir) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(meta) => Err(Refused(format!("{} is {}, not a folder", dir.display(), kind(&meta.file_type())))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Err(Refused(format!("the folder {} does not exist (indexq does not create it)", dir.display())))
                }
                Err(e) => Err(Refused(format!("the folder {}: {e}", dir.display()))),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(Refused("a part of the path before the file name is not a folder".into()))
        }
        Err(e) => Err(Refused(e.to_string())),
    }
}

/// `check_target`, and whether a file can be made in the folder, which
/// the write does before the rename: a folder on a read-only file system
/// (systemd's `ProtectSystem=strict` makes `/var` one, outside a unit's
/// `StateDirectory` and `ReadWritePaths=`) or one this user may not write
/// is refused before a run sends anything, not after. The check makes an
/// empty file with the write's own temporary name and removes it.
pub fn check_writable(path: &Path) -> Result<(), Refused> {
    check_target(path)?;
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = match is_link {
        true => fs::canonicalize(path).map_err(|e| Refused(e.to_string()))?,
        false => path.to_path_buf(),
    };
    let tmp = temporary_beside(&target).map_err(|e| Refused(e.to_string()))?;
    let _ = fs::remove_file(&tmp);
    match fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
        Ok(_) => {
            let _ = fs::remove_file(&tmp);
            Ok(())
        }
        Err(e) => Err(Refused(format!(
            "no file can be made in the folder {} ({e}); the file is written whole to a new file there, then \
             renamed over the path",
            folder_of(&target).display()
        ))),
    }
}

/// Why a file that is not a regular one is refused.
const REPLACED: &str = "the file is written whole to a new file that is then renamed over the path, which would \
                        replace it";

/// What a file that is not a regular one is, in words.
fn kind(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// The folder a file of `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Writes `bytes` to `path` atomically. The file is readable by others
/// (mode 0644, less the umask): a collector or a web server reads it. A
/// path `check_target` refuses is refused here too, also when it became
/// one while the file was written.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let cannot = || format!("cannot write {}", path.display());
    check_target(path).with_context(cannot)?;
    // A symbolic link: the file it leads to is replaced (the link stays).
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link { fs::canonicalize(path).with_context(cannot)? } else { path.to_path_buf() };
    let tmp = temporary_beside(&target).with_context(cannot)?;
    let written = write_new(&tmp, bytes).map_err(anyhow::Error::from).and_then(|()| replace(&tmp, &target));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written.with_context(cannot)
}

/// Renames `tmp` over `target` if that is still a regular file or nothing:
/// checked again just before the rename, as it may have changed meanwhile
/// (a FIFO made there, a link to a device swapped in).
fn replace(tmp: &Path, target: &Path) -> anyhow::Result<()> {
    check_target(target)?;
    Ok(fs::rename(tmp, target)?)
}

/// `DIR/.NAME.PID.tmp`: in the target's directory (a rename does not cross
/// file systems), hidden, and not ending in `.prom` (the textfile collector
/// reads only `*.prom`).
fn temporary_beside(path: &Path) -> anyhow::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| anyhow::anyhow!("not a file name"))?;
    Ok(folder_of(path).join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id())))
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

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
    }

    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_or_a_new_one_in_an_existing_folder_is_a_target() {
        use std::os::unix::fs::{symlink, FileTypeExt};
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        fs::write(at("file.prom"), "old").unwrap();
        mkfifo(&at("fifo"));
        symlink(at("fifo"), at("to-fifo")).unwrap();
        symlink(at("file.prom"), at("to-file")).unwrap();
        symlink(at("nowhere"), at("dangling")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(at("socket")).unwrap();
        assert_eq!(check_target(&at("file.prom")), Ok(()));
        assert_eq!(check_target(&at("new.prom")), Ok(()));
        assert_eq!(check_target(&at("to-file")), Ok(()));
        let refused = |path: &Path| check_target(path).unwrap_err().0;
        assert!(refused(Path::new("/dev/null")).starts_with("it is a character device, not a regular file"));
        assert!(refused(&at("fifo")).starts_with("it is a FIFO (named pipe), not a regular file"));
        assert!(refused(&at("socket")).starts_with("it is a socket"));
        assert!(refused(dir.path()).starts_with("it is a directory"));
        assert!(refused(&at("to-fifo")).starts_with("it is a symbolic link to a FIFO"));
        assert!(refused(&at("dangling")).contains("which does not exist"));
        // A folder no file can be made in (procfs, root or not), and a
        // writable one, which the probe leaves as it was.
        assert_eq!(check_target(Path::new("/proc/version")), Ok(()));
        let probe = check_writable(Path::new("/proc/version")).unwrap_err().0;
        assert!(probe.starts_with("no file can be made in the folder /proc ("), "{probe}");
        let before: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(check_writable(&at("new.prom")), Ok(()));
        assert_eq!(check_writable(&at("to-file")), Ok(()));
        assert!(check_writable(&at("fifo")).unwrap_err().0.contains("FIFO"));
        let after: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(before, after, "the probe leaves nothing");
        let missing = refused(&at("no-such-dir/m.prom"));
        assert!(missing.contains("no-such-dir does not exist (indexq does not create it)"), "{missing}");
        assert!(refused(&at("file.prom/m.prom")).contains("not a folder"));

        // The write refuses the same, and leaves the FIFO as it was.
        let err = write_atomically(&at("to-fifo"), b"x").unwrap_err();
        assert!(format!("{err:#}").contains("FIFO"), "{err:#}");
        assert!(fs::metadata(at("fifo")).unwrap().file_type().is_fifo());
        // A link to a regular file: the file is replaced, the link stays.
        write_atomically(&at("to-file"), b"new").unwrap();
        assert!(fs::symlink_metadata(at("to-file")).unwrap().file_type().is_symlink());
        assert_eq!(fs::read(at("file.prom")).unwrap(), b"new");
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["dangling", "fifo", "file.prom", "socket", "to-fifo", "to-file"], "no temporary left");
    }

    #[cfg(unix)]
    #[test]
    fn a_target_that_became_a_fifo_or_a_link_to_a_device_meanwhile_is_not_replaced() {
        use std::os::unix::fs::{symlink, FileTypeExt};
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("m.prom");
        let tmp = temporary_beside(&target).unwrap();
        write_new(&tmp, b"x").unwrap();
        mkfifo(&target);
        let err = replace(&tmp, &target).unwrap_err();
        assert!(format!("{err:#}").contains("FIFO"), "{err:#}");
        assert!(fs::metadata(&target).unwrap().file_type().is_fifo());
        fs::remove_file(&target).unwrap();
        symlink("/dev/null", &target).unwrap();
        let err = replace(&tmp, &target).unwrap_err();
        assert!(format!("{err:#}").contains("a symbolic link to a character device"), "{err:#}");
        assert!(fs::symlink_metadata(&target).unwrap().file_type().is_symlink());
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    }
}
