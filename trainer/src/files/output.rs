//! Outputs written whole or not at all, and checked before any work.
//!
//! [`AtomicFile`] writes to a temporary file beside the target, flushes and
//! syncs it, renames it over the target and syncs the directory: a full
//! disk, a file-size limit or a second writer leaves either the old file or
//! the new one, never a mixture. A symbolic link is followed (the file it
//! names is replaced, the link kept); a device or a pipe (`/dev/null`) is
//! written in place, since it cannot be replaced.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::temporaries::{forget, live};
use super::{FileId, Input};
use crate::{Error, Result};

/// Temporary files made by this process so far (for unique names).
static TEMPS: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` through an `AtomicFile`.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("m.sgp");
/// sgp_trainer::files::write_atomic(&path, b"new").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"new");
/// ```
///
/// # Errors
/// [`Error::Io`] naming `path` if any step fails; the old file is then
/// unchanged and no temporary file is left.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|e| file.error(e))?;
    file.commit()
}

/// A file being written: the target is replaced at [`AtomicFile::commit`];
/// dropped without a commit, it leaves the target as it was.
#[derive(Debug)]
pub(crate) struct AtomicFile {
    writer: Option<BufWriter<File>>,
    /// The temporary file; `None` when writing a device or pipe in place.
    temp: Option<PathBuf>,
    target: PathBuf,
    /// The path as the user gave it, for messages.
    shown: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path`.
    ///
    /// # Errors
    /// [`Error::Io`] if the temporary file cannot be made.
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let target = follow_link(path).map_err(io)?;
        let existing = std::fs::metadata(&target).ok();
        if existing
            .as_ref()
            .is_some_and(|m| !m.is_file() && !m.is_dir())
        {
            let file = OpenOptions::new().write(true).open(&target).map_err(io)?;
            return Ok(AtomicFile {
                writer: Some(BufWriter::new(file)),
                temp: None,
                target,
                shown: path.to_path_buf(),
            });
        }
        let (temp, file) = make_temp(&target).map_err(io)?;
        let mut atomic = AtomicFile {
            writer: Some(BufWriter::new(file)),
            temp: Some(temp),
            target,
            shown: path.to_path_buf(),
        };
        if let (Some(meta), Some(w)) = (existing, atomic.writer.as_mut()) {
            // Keep the replaced file's permissions (ownership is the writer's).
            w.get_ref()
                .set_permissions(meta.permissions())
                .map_err(|e| atomic_error(path, e))?;
        }
        Ok(atomic)
    }

    /// Flushes and syncs the data, renames it over the target and syncs the
    /// directory.
    ///
    /// # Errors
    /// [`Error::Io`] naming the target; the old file is then unchanged.
    pub fn commit(mut self) -> Result<()> {
        let writer = self
            .writer
            .take()
            .ok_or_else(|| self.error(std::io::Error::other("already committed")))?;
        let file = writer
            .into_inner()
            .map_err(|e| self.error(e.into_error()))?;
        let Some(temp) = self.temp.clone() else {
            return Ok(()); // a device or pipe: written in place
        };
        file.sync_all().map_err(|e| self.error(e))?;
        drop(file);
        {
            let mut list = live();
            std::fs::rename(&temp, &self.target).map_err(|e| self.error(e))?;
            forget(&mut list, &temp);
            self.temp = None;
        }
        // Best effort: the rename is done; a directory that cannot be synced
        // (some file systems) still holds the new file.
        if let Some(dir) = parent_dir(&self.target) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    fn error(&self, source: std::io::Error) -> Error {
        atomic_error(&self.shown, source)
    }
}

fn atomic_error(shown: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: shown.to_path_buf(),
        source: std::io::Error::new(
            source.kind(),
            format!("not written (any earlier file there is unchanged): {source}"),
        ),
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.writer.as_mut() {
            Some(w) => w.write(buf),
            None => Err(std::io::Error::other("already committed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            drop(self.writer.take());
            let mut list = live();
            let _ = std::fs::remove_file(&temp);
            forget(&mut list, &temp);
        }
    }
}

/// The file a symbolic link names (the path itself otherwise, and for a
/// link to something without a path, such as `/dev/stdout` on a pipe).
fn follow_link(path: &Path) -> std::io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).or_else(|e| match std::fs::metadata(path) {
                Ok(_) => Ok(path.to_path_buf()),
                Err(_) => Err(e),
            })
        }
        _ => Ok(path.to_path_buf()),
    }
}

fn parent_dir(path: &Path) -> Option<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Some(Path::new(".")),
        other => other,
    }
}

/// A new, empty temporary file beside `target` (hidden, named after it),
/// listed for removal on an interruption until it is renamed or removed.
fn make_temp(target: &Path) -> std::io::Result<(PathBuf, File)> {
    let dir = parent_dir(target).unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy());
    loop {
        let n = TEMPS.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.{}-{n}.sgp-tmp", std::process::id()));
        let mut list = live();
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => {
                list.push(temp.clone());
                return Ok((temp, file));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1_000_000 => {}
            Err(e) => return Err(e),
        }
    }
}

/// Checks, before any work, that every output (`(flag, path)`) can be
/// written and is none of the `inputs` nor another output: the path (or
/// the file a symbolic link names) is not a directory, its directory
/// exists and is writable, an existing file is not read-only, and no
/// output is an input by any name (`./x`, a symbolic or a hard link).
///
/// # Errors
/// [`Error::BadInput`] naming the flag and the path.
pub fn check_outputs(outputs: &[(&str, &Path)], inputs: &[&Input]) -> Result<()> {
    let mut seen: Vec<(&str, PathBuf)> = Vec::new();
    for &(flag, out) in outputs {
        let shown = out.display();
        let bad = |why: String| Error::BadInput(format!("{flag} {shown}: {why}"));
        if out.as_os_str().is_empty() {
            return Err(bad("an empty path".into()));
        }
        let target = follow_link(out)
            .map_err(|_| bad("a symbolic link to a file that does not exist".into()))?;
        let existing = std::fs::metadata(&target).ok();
        if let Some(meta) = &existing {
            if meta.is_dir() {
                return Err(bad("is a directory; give a file name inside it".into()));
            }
            if let Some(input) = inputs.iter().find(|i| same_file(i, meta, &target)) {
                return Err(bad(format!(
                    "is the input {} (the same file): writing it would destroy the input; choose \
                     another output path",
                    input.name()
                )));
            }
            if meta.is_file() && meta.permissions().readonly() {
                return Err(bad("is read-only".into()));
            }
        }
        let dir = parent_dir(&target).unwrap_or(Path::new("."));
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(bad(format!("'{}' is not a directory", dir.display()))),
            Err(_) => return Err(bad(format!("directory '{}' does not exist", dir.display()))),
        }
        if target.file_name().is_none() {
            return Err(bad("names a directory, not a file".into()));
        }
        let resolved = match std::fs::canonicalize(dir) {
            Ok(d) => d.join(target.file_name().unwrap_or_default()),
            Err(_) => target.clone(),
        };
        if let Some((other, _)) = seen.iter().find(|(_, p)| *p == resolved) {
            return Err(bad(format!(
                "is also {other}: two outputs cannot share a file"
            )));
        }
        let writable_in_place = existing.as_ref().is_some_and(|m| !m.is_file());
        if !writable_in_place {
            // Make (and remove) the temporary file the write will use.
            let (temp, file) = make_temp(&target)
                .map_err(|e| bad(format!("cannot write in '{}': {e}", dir.display())))?;
            drop(file);
            let mut list = live();
            let _ = std::fs::remove_file(&temp);
            forget(&mut list, &temp);
        }
        seen.push((flag, resolved));
    }
    Ok(())
}

/// Refuses an output inside the input directory `dir` (`--data DIR`): the
/// next fit of that directory would read it as one of its files.
///
/// # Errors
/// [`Error::BadInput`] naming the flag, the output and the directory.
pub(crate) fn check_outside(outputs: &[(&str, &Path)], dir: &Path) -> Result<()> {
    let Ok(dir_path) = std::fs::canonicalize(dir) else {
        return Ok(());
    };
    for &(flag, out) in outputs {
        let target = follow_link(out).unwrap_or_else(|_| out.to_path_buf());
        let parent = parent_dir(&target).unwrap_or(Path::new("."));
        if std::fs::canonicalize(parent).is_ok_and(|p| p == dir_path) {
            return Err(Error::BadInput(format!(
                "{flag} {}: is inside the input directory {}; the next fit of that directory \
                 would read it as one of its files: choose another output path",
                out.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Whether `input` is the file `meta` (at `target`) describes.
fn same_file(input: &Input, meta: &std::fs::Metadata, target: &Path) -> bool {
    match (input.id(), FileId::of(meta)) {
        (Some(a), Some(b)) => a == b,
        _ => input
            .canonical_path()
            .is_some_and(|p| std::fs::canonicalize(target).is_ok_and(|t| t == p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sgp");
        std::fs::write(&path, "old").unwrap();
        {
            let mut f = AtomicFile::create(&path).unwrap();
            f.write_all(b"half of a new").unwrap();
            // Dropped without commit: as if the process failed here.
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_followed_and_permissions_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.sgp");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.sgp");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        write_atomic(Path::new("/dev/null"), b"gone").unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn outputs_that_are_inputs_or_unwritable_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d.csv");
        std::fs::write(&data, "a,y\n1,2\n").unwrap();
        let input = Input::open(&data).unwrap();
        let hard = dir.path().join("hard.csv");
        std::fs::hard_link(&data, &hard).unwrap();
        let soft = dir.path().join("soft.csv");
        std::os::unix::fs::symlink(&data, &soft).unwrap();
        let dotted = dir.path().join(".").join("d.csv");
        for out in [&data, &hard, &soft, &dotted] {
            let err = check_outputs(&[("--out", out)], &[&input])
                .unwrap_err()
                .to_string();
            assert!(err.contains("is the input"), "{err}");
        }
        let fine = dir.path().join("m.sgp");
        check_outputs(&[("--out", &fine)], &[&input]).unwrap();
        let err = check_outputs(&[("--out", &fine), ("--golden", &fine)], &[&input])
            .unwrap_err()
            .to_string();
        assert!(err.contains("is also --out"), "{err}");
        let err = check_outputs(&[("--out", dir.path())], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("is a directory"), "{err}");
        let nodir = dir.path().join("nodir").join("g.rs");
        let err = check_outputs(&[("--golden", &nodir)], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }
}
