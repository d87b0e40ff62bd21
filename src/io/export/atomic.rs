//! The one safe write: what headroom writes to a path the user named (reports, scenarios, the
//! calibration) goes through [`write_atomic`], which looks at what is there first:
//!
//! - nothing, or a regular file: the bytes go to a temporary file in the same folder, are
//!   flushed to disk (`fsync`) and the temporary file is renamed over the target. A reader sees
//!   the old file or the new one, never half of either; a failure leaves the old file as it was
//!   and removes the temporary file.
//! - a symbolic link: followed to what it names, which is then written as above (the link stays
//!   a link); a link to nothing is refused. Links through `/proc` (`/dev/stdout` →
//!   `/proc/self/fd/1`) name an open file, not a path, and are written through.
//! - a character device or a FIFO (`/dev/stdout`, `/dev/null`, a terminal, `mkfifo`): written
//!   through, in place; never replaced by a regular file.
//! - a folder, a block device or a socket: refused, nothing written.

use super::ExportError;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How a path is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A regular file or nothing: replaced atomically at this path (symbolic links resolved).
    Replace(PathBuf),
    /// A device, a FIFO or an open file named through `/proc`: opened and written in place.
    Through(PathBuf),
}

/// The most symbolic links followed (Linux `MAXSYMLINKS` is 40).
const MAX_LINKS: usize = 40;

/// What writing `path` would do, or why it cannot be written (a sentence for
/// [`ExportError::Write`]). Looks, never creates.
pub fn target_of(path: &Path) -> Result<Target, String> {
    if path.as_os_str().is_empty() || path.file_name().is_none() && !path.is_dir() {
        return Err("that is not a file name".into());
    }
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let md = match fs::symlink_metadata(&p) {
            Ok(md) => md,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if p != path {
                    return Err(format!(
                        "it is a symbolic link to '{}', which does not exist",
                        p.display()
                    ));
                }
                return Ok(Target::Replace(p));
            }
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(format!("'{}' is not a folder", folder_of(&p).display()));
            }
            Err(e) => return Err(io_reason(&e)),
        };
        if md.file_type().is_symlink() {
            if p.starts_with("/proc") || p.starts_with("/dev/fd") {
                // A "magic" link naming an open file (procfs): its target is not a path to
                // replace, so what it names is written through.
                let md = fs::metadata(&p).map_err(|e| io_reason(&e))?;
                return kind_of(&md, path, p, true);
            }
            let t = fs::read_link(&p).map_err(|e| io_reason(&e))?;
            p = if t.is_absolute() {
                t
            } else {
                p.parent().unwrap_or(Path::new("")).join(t)
            };
            continue;
        }
        return kind_of(&md, path, p, false);
    }
    Err(format!(
        "more than {MAX_LINKS} symbolic links (a loop?) from '{}'",
        path.display()
    ))
}

/// The target for what `md` (of `p`, reached from `asked`) describes.
fn kind_of(md: &fs::Metadata, asked: &Path, p: PathBuf, through: bool) -> Result<Target, String> {
    let linked = if p != asked {
        format!(" ('{}' links to it)", asked.display())
    } else {
        String::new()
    };
    let ft = md.file_type();
    if ft.is_dir() {
        return Err(format!("it is a folder, not a file{linked}"));
    }
    if ft.is_file() {
        return Ok(if through {
            Target::Through(p)
        } else {
            Target::Replace(p)
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if ft.is_char_device() || ft.is_fifo() {
            return Ok(Target::Through(p));
        }
        if ft.is_block_device() {
            return Err(format!(
                "it is a block device (a disk){linked}: headroom writes to files, character devices and pipes only"
            ));
        }
        if ft.is_socket() {
            return Err(format!("it is a socket{linked}, not a file"));
        }
    }
    Err(format!("it is not a regular file{linked}"))
}

/// Checks that `path` can be written, before the work that makes the bytes: its kind
/// ([`target_of`]) and, for a file to be replaced, that its folder exists. The error names the
/// path.
pub fn check_target(path: &Path) -> Result<Target, ExportError> {
    let err = |reason: String| ExportError::Write {
        path: path.display().to_string(),
        reason,
    };
    let t = target_of(path).map_err(err)?;
    if let Target::Replace(p) = &t {
        let dir = folder_of(p);
        if !dir.exists() {
            return Err(err(format!(
                "the folder '{}' does not exist",
                dir.display()
            )));
        }
        if !dir.is_dir() {
            return Err(err(format!("'{}' is not a folder", dir.display())));
        }
    }
    Ok(t)
}

fn folder_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Write `bytes` to `path` safely: atomically for a regular file (temporary file in the same
/// folder + fsync + rename), through the device or FIFO otherwise (see the module doc).
///
/// On failure nothing is left behind and an existing file at `path` is untouched; the error
/// names the path and says why in plain words.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    write_atomic_with(path, bytes, |_| Ok(()))
}

/// [`write_atomic`] with a hook run after the temporary file is written and synced, before the
/// rename (tests use it to fail at the worst moment).
pub(crate) fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce(&Path) -> io::Result<()>,
) -> Result<(), ExportError> {
    let shown = path.display().to_string();
    let err = |reason: String| ExportError::Write {
        path: shown.clone(),
        reason,
    };
    let target = match check_target(path)? {
        Target::Through(p) => return write_through(&p, bytes).map_err(|e| err(io_reason(&e))),
        Target::Replace(p) => p,
    };
    let Some(name) = target.file_name() else {
        return Err(err("that is not a file name".into()));
    };
    let dir = folder_of(&target);
    let (tmp, mut file) =
        create_temp(&dir, &name.to_string_lossy()).map_err(|e| err(reason(&e, &dir)))?;
    let result = (|| -> io::Result<()> {
        file.write_all(bytes)?;
        file.sync_all()?;
        // Keep the permissions of the file being replaced (a report made executable or private
        // stays so).
        if let Ok(meta) = fs::metadata(&target) {
            let _ = fs::set_permissions(&tmp, meta.permissions());
        }
        drop(file);
        before_rename(&tmp)?;
        fs::rename(&tmp, &target)?;
        sync_dir(&dir);
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(err(reason(&e, &dir)));
    }
    Ok(())
}

/// Writes into an existing device, FIFO or open file in place (a FIFO blocks until it has a
/// reader, as `tee` does). A regular file is truncated first; devices and FIFOs are not.
fn write_through(p: &Path, bytes: &[u8]) -> io::Result<()> {
    let regular = fs::metadata(p).is_ok_and(|m| m.is_file());
    let mut f = OpenOptions::new().write(true).truncate(regular).open(p)?;
    f.write_all(bytes)?;
    f.flush()
}

/// Creates a new, unique temporary file next to the target: `.NAME.headroom-PID-N.tmp`.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.headroom-{pid}-{n}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("cannot create a temporary file")))
}

/// Flush the folder entry so the rename survives a crash (best effort; not possible everywhere).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// An IO error of a write in words a user can act on (no folder involved).
pub fn io_reason(e: &io::Error) -> String {
    use io::ErrorKind as K;
    match e.kind() {
        K::PermissionDenied => "permission denied".into(),
        K::ReadOnlyFilesystem => "the file system is read-only".into(),
        K::StorageFull => "no space left on the device (the disk is full)".into(),
        K::QuotaExceeded => "the disk quota is exceeded".into(),
        K::IsADirectory => "it is a folder, not a file".into(),
        _ => e.to_string(),
    }
}

/// An IO error while creating or renaming in `dir`, in words a user can act on.
fn reason(e: &io::Error, dir: &Path) -> String {
    use io::ErrorKind as K;
    match e.kind() {
        K::PermissionDenied => {
            format!(
                "permission denied (the folder '{}' is read-only or not yours)",
                dir.display()
            )
        }
        // The folder is there but refuses new files (procfs, sysfs): not "does not exist".
        K::NotFound if dir.is_dir() => format!(
            "the folder '{}' does not take new files ({e}): it is not an ordinary folder",
            dir.display()
        ),
        K::NotFound => format!("the folder '{}' does not exist", dir.display()),
        K::NotADirectory => format!("'{}' is not a folder", dir.display()),
        _ => io_reason(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn writes_and_replaces() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("report.md");
        write_atomic(&p, b"first").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"first");
        write_atomic(&p, b"second, longer").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second, longer");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn failure_before_rename_leaves_the_old_file_and_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("report.json");
        fs::write(&p, b"old contents").unwrap();
        let e = write_atomic_with(&p, b"new contents", |tmp| {
            // The temporary file is complete and in the same folder at this point.
            assert_eq!(tmp.parent(), p.parent());
            assert_eq!(fs::read(tmp).unwrap(), b"new contents");
            Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
        })
        .unwrap_err();
        assert_eq!(fs::read(&p).unwrap(), b"old contents");
        assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
        let msg = e.to_string();
        assert!(
            msg.contains("report.json") && msg.contains("disk is full"),
            "{msg}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_of_the_replaced_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("private.md");
        fs::write(&p, b"x").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&p, b"y").unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_written_through_and_stays_a_link() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.md");
        fs::write(&real, b"old").unwrap();
        let link = d.path().join("link.md");
        std::os::unix::fs::symlink("real.md", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"new");
        let dangling = d.path().join("dangling.md");
        std::os::unix::fs::symlink("nowhere/x.md", &dangling).unwrap();
        let e = write_atomic(&dangling, b"x").unwrap_err().to_string();
        assert!(e.contains("does not exist"), "{e}");
        assert!(
            fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_through_and_folders_refused() {
        assert_eq!(
            target_of(Path::new("/dev/null")),
            Ok(Target::Through("/dev/null".into()))
        );
        write_atomic(Path::new("/dev/null"), b"x").unwrap();
        assert!(
            fs::metadata("/dev/null")
                .map(|m| !m.is_file())
                .unwrap_or(true)
        );
        let d = tempfile::tempdir().unwrap();
        let e = write_atomic(d.path(), b"x").unwrap_err().to_string();
        assert!(e.contains("folder"), "{e}");
    }
}
