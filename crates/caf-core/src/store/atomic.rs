//! Atomic, durable file writes.
//!
//! The bytes go to a temporary file in a directory on the same file system, which is flushed to
//! disk (`fsync`), renamed over the target (atomic on POSIX), and then the target's directory is
//! flushed so that the rename itself survives a crash. A reader sees the old file or the new one,
//! never a mix; after a crash at any instant the target is whole. On error the temporary file is
//! removed.

use crate::error::{Error, Result};
use std::fs::{File, Metadata};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How [`write_atomic`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicWriteOptions {
    /// Flush the file and its directory to disk (default `true`). Without it the write is still
    /// atomic for readers, but a power loss may lose it.
    pub durable: bool,
}

impl Default for AtomicWriteOptions {
    fn default() -> Self {
        Self { durable: true }
    }
}

/// Writes `bytes` to `target` atomically (see the module docs), staging the temporary file in
/// `temp_dir` (which must be on the same file system; `None` means the target's directory).
/// Returns the metadata of the written file.
pub fn write_atomic(
    target: &Path,
    temp_dir: Option<&Path>,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Result<Metadata> {
    stage(target, temp_dir, bytes, options)?.publish()
}

/// Writes `bytes` to a temporary file for `target` (flushed to disk if `options.durable`),
/// without putting it in place yet: [`Staged::publish`] does that. A store that must record the
/// write elsewhere first (a database commit) stages, commits, then publishes; dropping the
/// [`Staged`] instead removes the temporary file, and `target` never changes.
pub fn stage(
    target: &Path,
    temp_dir: Option<&Path>,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Result<Staged> {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = temp_dir.unwrap_or(dir);
    let mut tmp = temp_file(staging, TEMP_PREFIX)?;
    // An error writing names the file being saved (the temporary file is removed).
    tmp.write_all(bytes).map_err(|e| Error::io(target, e))?;
    if options.durable {
        tmp.as_file()
            .sync_data()
            .map_err(|e| Error::io(target, e))?;
    }
    Ok(Staged {
        tmp,
        target: target.to_path_buf(),
        dir: dir.to_path_buf(),
        options,
    })
}

/// Like [`stage`], into `spare`: an empty file made beforehand in the staging directory (see
/// [`make_spare`]), so that the save does not pay for creating a file (allocating an inode can
/// cost more than writing 100 KB). `None` if the spare is gone (removed as stale by another
/// process): stage anew.
pub fn stage_into_spare(
    spare: PathBuf,
    target: &Path,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Option<Result<Staged>> {
    // Only the empty regular file this process made: a link planted in its place (it could
    // point anywhere) is neither followed into nor truncated.
    let made = std::fs::symlink_metadata(&spare).ok()?;
    if !made.file_type().is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new().write(true).open(&spare).ok()?;
    if !same_file(&made, &file.metadata().ok()?) {
        return None;
    }
    file.set_len(0).ok()?;
    let mut tmp =
        tempfile::NamedTempFile::from_parts(file, tempfile::TempPath::try_from_path(spare).ok()?);
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let written = tmp
        .write_all(bytes)
        .and_then(|()| {
            if options.durable {
                tmp.as_file().sync_data()
            } else {
                Ok(())
            }
        })
        .map_err(|e| Error::io(target, e));
    Some(written.map(|()| Staged {
        tmp,
        target: target.to_path_buf(),
        dir,
        options,
    }))
}

/// Whether `a` (from `symlink_metadata`) and `b` (of an open file) are the same regular file.
#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino() && b.is_file()
}

#[cfg(not(unix))]
fn same_file(_a: &Metadata, b: &Metadata) -> bool {
    b.is_file()
}

/// Makes an empty spare file in `dir` for [`stage_into_spare`].
pub fn make_spare(dir: &Path) -> Result<PathBuf> {
    let tmp = temp_file(dir, SPARE_PREFIX)?;
    tmp.into_temp_path()
        .keep()
        .map_err(|e| Error::io(dir, e.error))
}

/// A new temporary `.json` file in `dir` named with `prefix`.
fn temp_file(dir: &Path, prefix: &str) -> Result<tempfile::NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).suffix(".json");
    #[cfg(unix)]
    {
        // Checkpoints are ordinary documents (meant for git): rw-r--r--, not tempfile's 0600.
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    builder.tempfile_in(dir).map_err(|e| Error::io(dir, e))
}

/// How spare files are named (stale-file cleaning gives them longer).
pub const SPARE_PREFIX: &str = ".caf-spare-";

/// How staged (temporary) files are named.
pub const TEMP_PREFIX: &str = ".caf-tmp-";

/// A whole file written next to its target, not yet in place (see [`stage`]). Dropped without
/// [`publish`](Staged::publish), its temporary file is removed.
#[derive(Debug)]
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
    dir: PathBuf,
    options: AtomicWriteOptions,
}

impl Staged {
    /// Renames the file over its target (atomic: a reader sees the old file or the new one) and,
    /// when durable, flushes the directory so that the rename survives a power loss. Returns
    /// the metadata of the file.
    pub fn publish(self) -> Result<Metadata> {
        let meta = self
            .tmp
            .as_file()
            .metadata()
            .map_err(|e| Error::io(self.tmp.path(), e))?;
        self.tmp
            .persist(&self.target)
            .map_err(|e| Error::io(&self.target, e.error))?;
        if self.options.durable {
            sync_dir(&self.dir)?;
        }
        Ok(meta)
    }
}

/// Flushes a directory's entries to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_replaces_without_leaving_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.json");
        write_atomic(&target, None, b"one", AtomicWriteOptions::default()).unwrap();
        write_atomic(&target, None, b"two", AtomicWriteOptions { durable: false }).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn failure_leaves_target_and_directory_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub").join("a.json"); // the directory does not exist
        assert!(write_atomic(
            &target,
            Some(dir.path()),
            b"x",
            AtomicWriteOptions::default()
        )
        .is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
