//! Atomic file writes: the bytes go to a temporary file in the target's folder, are flushed to
//! disk (`fsync`), and the temporary file is renamed over the target. A reader sees the old file
//! or the new one, never half of either; a failure leaves the old file as it was and removes the
//! temporary file.

use super::ExportError;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Write `bytes` to `path` atomically (temporary file in the same folder + fsync + rename).
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
    let Some(name) = path.file_name() else {
        return Err(err("that is not a file name".into()));
    };
    if path.is_dir() {
        return Err(err("it is a folder, not a file".into()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        return Err(err(format!(
            "the folder '{}' does not exist",
            dir.display()
        )));
    }
    if !dir.is_dir() {
        return Err(err(format!("'{}' is not a folder", dir.display())));
    }

    let (tmp, mut file) =
        create_temp(&dir, &name.to_string_lossy()).map_err(|e| err(reason(&e, &dir)))?;
    let result = (|| -> io::Result<()> {
        file.write_all(bytes)?;
        file.sync_all()?;
        // Keep the permissions of the file being replaced (a report made executable or private
        // stays so).
        if let Ok(meta) = fs::metadata(path) {
            let _ = fs::set_permissions(&tmp, meta.permissions());
        }
        drop(file);
        before_rename(&tmp)?;
        fs::rename(&tmp, path)?;
        sync_dir(&dir);
        Ok(())
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(err(reason(&e, &dir)));
    }
    Ok(())
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

/// An IO error in words a user can act on.
fn reason(e: &io::Error, dir: &Path) -> String {
    use io::ErrorKind as K;
    match e.kind() {
        K::PermissionDenied => {
            format!(
                "permission denied (the folder '{}' is read-only or not yours)",
                dir.display()
            )
        }
        K::NotFound => format!("the folder '{}' does not exist", dir.display()),
        K::ReadOnlyFilesystem => "the file system is read-only".into(),
        K::StorageFull => "the disk is full".into(),
        K::QuotaExceeded => "the disk quota is exceeded".into(),
        K::IsADirectory => "it is a folder, not a file".into(),
        K::NotADirectory => format!("'{}' is not a folder", dir.display()),
        _ => e.to_string(),
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
}
