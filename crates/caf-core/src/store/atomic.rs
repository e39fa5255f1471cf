//! Atomic, durable file writes.
//!
//! The bytes go to a temporary file in a directory on the same file system, which is flushed to
//! disk (`fsync`), renamed over the target (atomic on POSIX), and then the target's directory is
//! flushed so that the rename itself survives a crash. A reader sees the old file or the new one,
//! never a mix; after a crash at any instant the target is whole. On error the temporary file is
//! removed.
//!
//! Every operation goes through the store's [`Fs`] (the real file system unless a test says
//! otherwise); the public functions here use the real one.

use super::fs::{parent_dir, same_file, write_all, Fs, RealFs};
use crate::error::{Error, Result};
use std::fs::{File, Metadata};
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
    write_atomic_in(&RealFs, target, temp_dir, bytes, options)
}

/// [`write_atomic`] through `fs` (a store's file system:
/// [`FileStore::fs`](super::FileStore::fs)).
pub fn write_atomic_in<F: Fs>(
    fs: &F,
    target: &Path,
    temp_dir: Option<&Path>,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Result<Metadata> {
    stage_in(fs, target, temp_dir, bytes, options)?.publish()
}

/// Writes `bytes` to `target` if `target` does not exist yet, atomically: staged in `target`'s
/// directory, then linked into place (`link(2)`, which never replaces a file), so that among
/// processes racing to make the same file exactly one wins and every reader sees its bytes
/// whole. Returns whether this call made the file (`false`: it existed, and is unchanged).
/// When `options.durable`, the file and its directory are flushed.
pub fn write_new_in<F: Fs>(
    fs: &F,
    target: &Path,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Result<bool> {
    let staged = stage_in(fs, target, None, bytes, options)?;
    match fs.hard_link(&staged.tmp.path, target) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(Error::io(target, e)),
    }
    // The temporary name goes (the file keeps its new one) before the directory is flushed.
    let dir = staged.dir.clone();
    drop(staged);
    if options.durable {
        sync_dir_in(fs, &dir)?;
    }
    Ok(true)
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
    stage_in(&RealFs, target, temp_dir, bytes, options)
}

/// [`stage`] through `fs`.
pub(crate) fn stage_in<F: Fs>(
    fs: &F,
    target: &Path,
    temp_dir: Option<&Path>,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Result<Staged<F>> {
    let dir = parent_dir(target);
    let tmp = TempFile::create(fs, temp_dir.unwrap_or(&dir), TEMP_PREFIX)?;
    fill(tmp, target, dir, bytes, options)
}

/// Writes `bytes` into the temporary file `tmp` (flushing them if durable): a staged file.
fn fill<F: Fs>(
    tmp: TempFile<F>,
    target: &Path,
    dir: PathBuf,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Result<Staged<F>> {
    // An error writing names the file being saved (the temporary file is removed).
    write_all(&tmp.fs, &tmp.file, &tmp.path, bytes).map_err(|e| Error::io(target, e))?;
    if options.durable {
        tmp.fs
            .sync_data(&tmp.file, &tmp.path)
            .map_err(|e| Error::io(target, e))?;
    }
    Ok(Staged {
        tmp,
        target: target.to_path_buf(),
        dir,
        options,
    })
}

/// Like [`stage`], into `spare`: an empty file made beforehand in the staging directory (see
/// [`make_spare`]), so that the save does not pay for creating a file (allocating an inode can
/// cost more than writing 100 KB). `None` if the spare is gone (removed as stale by another
/// process), is not the regular file it was made as, or is no longer empty: stage anew. The
/// spare is written as it is, not truncated first: on ext4 a truncated file is written out
/// when it is closed, which would put that work on the save's path.
pub fn stage_into_spare(
    spare: PathBuf,
    target: &Path,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Option<Result<Staged>> {
    stage_into_spare_in(&RealFs, spare, target, bytes, options)
}

/// [`stage_into_spare`] through `fs`.
pub(crate) fn stage_into_spare_in<F: Fs>(
    fs: &F,
    spare: PathBuf,
    target: &Path,
    bytes: &[u8],
    options: AtomicWriteOptions,
) -> Option<Result<Staged<F>>> {
    // Only the regular file this process made, still empty: a link planted in its place (it
    // could point anywhere) is neither followed nor written into (`open_spare` does not follow
    // a symbolic link; a hard link is refused by its link count), and a file with bytes in it
    // (they would outlast a shorter checkpoint) is not used: the open file says so.
    let made = std::fs::symlink_metadata(&spare).ok()?;
    if !made.file_type().is_file() || linked_elsewhere(&made) {
        return None;
    }
    let file = fs.open_spare(&spare).ok()?;
    let opened = file.metadata().ok()?;
    if !same_file(&made, &opened) || opened.len() != 0 {
        return None;
    }
    let tmp = TempFile {
        file,
        path: spare,
        fs: fs.clone(),
        keep: false,
    };
    Some(fill(tmp, target, parent_dir(target), bytes, options))
}

/// Whether the file has another name too (a hard link planted in place of a spare file).
#[cfg(unix)]
fn linked_elsewhere(m: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    m.nlink() != 1
}

#[cfg(not(unix))]
fn linked_elsewhere(_m: &Metadata) -> bool {
    false
}

/// Makes an empty spare file in `dir` for [`stage_into_spare`].
pub fn make_spare(dir: &Path) -> Result<PathBuf> {
    make_spare_in(&RealFs, dir)
}

/// [`make_spare`] through `fs`.
pub(crate) fn make_spare_in<F: Fs>(fs: &F, dir: &Path) -> Result<PathBuf> {
    Ok(TempFile::create(fs, dir, SPARE_PREFIX)?.keep())
}

/// How spare files are named (stale-file cleaning gives them longer).
pub const SPARE_PREFIX: &str = ".caf-spare-";

/// How staged (temporary) files are named.
pub const TEMP_PREFIX: &str = ".caf-tmp-";

/// A file of our own in the staging directory, removed when dropped unless kept or renamed.
#[derive(Debug)]
struct TempFile<F: Fs> {
    file: File,
    path: PathBuf,
    fs: F,
    keep: bool,
}

impl<F: Fs> TempFile<F> {
    /// A new empty `PREFIX<random>.json` in `dir`.
    fn create(fs: &F, dir: &Path, prefix: &str) -> Result<Self> {
        let mut tries = 0;
        loop {
            let path = dir.join(format!("{prefix}{}.json", uuid::Uuid::now_v7().simple()));
            match fs.create_new(&path) {
                Ok(file) => {
                    return Ok(Self {
                        file,
                        path,
                        fs: fs.clone(),
                        keep: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                    tries += 1;
                }
                Err(e) => return Err(Error::io(dir, e)),
            }
        }
    }

    /// Keeps the file (it is not removed when dropped) and returns its path.
    fn keep(mut self) -> PathBuf {
        self.keep = true;
        std::mem::take(&mut self.path)
    }
}

impl<F: Fs> Drop for TempFile<F> {
    fn drop(&mut self) {
        if !self.keep {
            let _ = self.fs.remove_file(&self.path);
        }
    }
}

/// A whole file written next to its target, not yet in place (see [`stage`]). Dropped without
/// [`publish`](Staged::publish), its temporary file is removed.
#[derive(Debug)]
pub struct Staged<F: Fs = RealFs> {
    tmp: TempFile<F>,
    target: PathBuf,
    dir: PathBuf,
    options: AtomicWriteOptions,
}

impl<F: Fs> Staged<F> {
    /// Renames the file over its target (atomic: a reader sees the old file or the new one) and,
    /// when durable, flushes the directory so that the rename survives a power loss. Returns
    /// the metadata of the file.
    pub fn publish(self) -> Result<Metadata> {
        match self.put_in_place() {
            Placed::Flushed(meta) => Ok(meta),
            Placed::Unflushed(_, e) | Placed::Not(e) => Err(e),
        }
    }

    /// [`Staged::publish`], saying whether the file is in place when something failed.
    pub(crate) fn put_in_place(mut self) -> Placed {
        let meta = match self.tmp.file.metadata() {
            Ok(m) => m,
            Err(e) => return Placed::Not(Error::io(&self.tmp.path, e)),
        };
        if let Err(e) = self.tmp.fs.rename(&self.tmp.path, &self.target) {
            return Placed::Not(Error::io(&self.target, e));
        }
        self.tmp.keep = true;
        if self.options.durable {
            if let Err(e) = self.tmp.fs.sync_dir(&self.dir) {
                return Placed::Unflushed(meta, Error::io(&self.dir, e));
            }
        }
        Placed::Flushed(meta)
    }
}

/// What [`Staged::put_in_place`] did.
#[derive(Debug)]
pub(crate) enum Placed {
    /// The file is in place (flushed, if the write is durable); its metadata.
    Flushed(Metadata),
    /// The file is in place, but its directory could not be flushed: a power loss may still
    /// undo the rename.
    Unflushed(Metadata, Error),
    /// The target is unchanged.
    Not(Error),
}

/// Flushes a directory's entries to disk.
pub fn sync_dir(dir: &Path) -> Result<()> {
    sync_dir_in(&RealFs, dir)
}

/// [`sync_dir`] through `fs`.
pub(crate) fn sync_dir_in<F: Fs>(fs: &F, dir: &Path) -> Result<()> {
    fs.sync_dir(dir).map_err(|e| Error::io(dir, e))
}

/// Flushes everything written on the file system that holds `dir` to disk: `syncfs` on Linux;
/// elsewhere, where there is no such call, only the directory (callers there flush each file).
pub fn sync_file_system(dir: &Path) -> Result<()> {
    RealFs.sync_fs(dir).map_err(|e| Error::io(dir, e))
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
    fn an_empty_spare_is_written_and_one_with_bytes_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.json");
        let spare = make_spare(dir.path()).unwrap();
        let staged = stage_into_spare(
            spare.clone(),
            &target,
            b"whole",
            AtomicWriteOptions { durable: false },
        );
        staged.unwrap().unwrap().publish().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        assert!(!spare.exists());

        // Bytes in a spare would outlast a shorter document: that spare is not used.
        let spare = make_spare(dir.path()).unwrap();
        std::fs::write(&spare, b"stale bytes, longer").unwrap();
        let other = dir.path().join("b.json");
        let staged = stage_into_spare(
            spare.clone(),
            &other,
            b"new",
            AtomicWriteOptions { durable: false },
        );
        assert!(staged.is_none());
        assert!(!other.exists());
        assert_eq!(std::fs::read(&spare).unwrap(), b"stale bytes, longer");
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
