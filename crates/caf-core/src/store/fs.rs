//! The seam between a store and the file system: the few operations a save, a load and a
//! hybrid store's flush perform (create, write, sync, rename, directory sync, read, remove).
//!
//! A [`FileStore`](super::FileStore) is generic over [`Fs`], with [`RealFs`] as the default: a
//! zero-sized type whose methods are the `std` calls themselves, so that in every normal build
//! the seam compiles away (no trait object, no branch). The trait is sealed: caf implements it
//! twice, for the real file system and (feature `test-support`) for
//! [`TestFs`](super::TestFs), the test double that fails the *n*-th operation or records every
//! operation for power-loss images. It is not a file-system abstraction for users.

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::thread::ThreadId;

thread_local! {
    /// The thread whose work this one is doing, inside [`working_for`].
    static WORKING_FOR: Cell<Option<ThreadId>> = const { Cell::new(None) };
}

/// Runs `f` on this thread as part of thread `caller`'s work (a hybrid store's thread writing
/// the file of a save made on `caller`): for the test double, the file-system operations `f`
/// makes are `caller`'s, so that a fault armed on the saving thread reaches every operation
/// of its save wherever it runs. Nothing else changes.
#[doc(hidden)]
pub fn working_for<R>(caller: ThreadId, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<ThreadId>);
    impl Drop for Restore {
        fn drop(&mut self) {
            WORKING_FOR.with(|w| w.set(self.0));
        }
    }
    let _restore = Restore(WORKING_FOR.with(|w| w.replace(Some(caller))));
    f()
}

/// The thread whose work this thread is doing: itself, unless inside [`working_for`].
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn acting_thread() -> ThreadId {
    WORKING_FOR
        .with(Cell::get)
        .unwrap_or_else(|| std::thread::current().id())
}

pub(crate) mod sealed {
    /// Only caf's own implementations of [`super::Fs`] exist.
    pub trait Sealed {}
}

/// The file-system operations of a store (see the module docs). Every method is one system
/// call, or as few as `std` makes it; `path` arguments beside a `file` name that file (for
/// messages and for the test double's records).
pub trait Fs: sealed::Sealed + Clone + Send + Sync + std::fmt::Debug + 'static {
    /// Creates the directory and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates a new file for writing (`rw-r--r--`), failing if `path` exists.
    fn create_new(&self, path: &Path) -> io::Result<File>;
    /// Opens an existing file for writing, as it is (a spare file about to be written: the
    /// caller checks that it is empty). Not `O_TRUNC`: on ext4, truncating a file, even an
    /// empty one, makes its close start writing the file out, in the caller's time.
    fn open_spare(&self, path: &Path) -> io::Result<File>;
    /// Opens a file for appending and reading, created if missing (the index log).
    fn open_append(&self, path: &Path) -> io::Result<File>;
    /// Opens a file for reading.
    fn open_read(&self, path: &Path) -> io::Result<File>;
    /// Opens a file to read it and write it in place, at any offset (a journal slot), never
    /// through a symbolic link on Linux; with `create`, a new one (`rw-r--r--`), failing if
    /// `path` exists.
    fn open_in_place(&self, path: &Path, create: bool) -> io::Result<File>;
    /// Writes some of `buf` at the file's position (as `write(2)`: may write less).
    fn write(&self, file: &File, path: &Path, buf: &[u8]) -> io::Result<usize>;
    /// Reads into `buf` from the file's position (as `read(2)`; 0 at the end).
    fn read(&self, file: &File, path: &Path, buf: &mut [u8]) -> io::Result<usize>;
    /// Reads the rest of the file into `out`, at most `limit` bytes, by [`Fs::read`]s through a
    /// buffer of its own. [`RealFs`] reads straight into `out`'s spare capacity instead (std's
    /// `read_to_end`), without zeroing a buffer and copying each chunk twice.
    fn read_to_end(
        &self,
        file: &File,
        path: &Path,
        out: &mut Vec<u8>,
        limit: u64,
    ) -> io::Result<()> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let room =
                usize::try_from(limit.saturating_sub(out.len() as u64)).unwrap_or(usize::MAX);
            if room == 0 {
                return Ok(());
            }
            let want = room.min(chunk.len());
            match self.read(file, path, &mut chunk[..want]) {
                Ok(0) => return Ok(()),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    /// Flushes the file's data (and the size needed to read it) to disk (`fdatasync`).
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()>;
    /// Renames `from` over `to` (atomic on POSIX).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Gives the file `from` the new name `to`, failing if `to` exists (`link(2)`): a file that
    /// appears whole and is never replaced.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Flushes a directory's entries to disk (`fsync` of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Flushes everything written on the file system holding `dir` (`syncfs` on Linux; elsewhere
    /// only the directory, see [`sync_file_system`](super::sync_file_system)).
    fn sync_fs(&self, dir: &Path) -> io::Result<()>;
    /// Whether a journal may write its records straight to the disk, past these methods
    /// (`O_DIRECT` through io_uring: `caf-sql`'s journal). The real file system's answer; a
    /// test double, which must see every write, says no.
    fn direct_appends(&self) -> bool {
        false
    }
}

/// The real file system: each method is the `std` (or `syncfs`) call it names. Zero-sized.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RealFs;

impl sealed::Sealed for RealFs {}

impl Fs for RealFs {
    fn direct_appends(&self) -> bool {
        true
    }

    #[inline]
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    #[inline]
    fn create_new(&self, path: &Path) -> io::Result<File> {
        new_file_options().open(path)
    }

    #[inline]
    fn open_spare(&self, path: &Path) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.write(true);
        // Never through a symbolic link planted in the file's place.
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        }
        o.open(path)
    }

    #[inline]
    fn open_append(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
    }

    #[inline]
    fn open_read(&self, path: &Path) -> io::Result<File> {
        File::open(path)
    }

    #[inline]
    fn open_in_place(&self, path: &Path, create: bool) -> io::Result<File> {
        let mut o = if create {
            new_file_options()
        } else {
            OpenOptions::new()
        };
        o.read(true).write(true);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
        }
        o.open(path)
    }

    #[inline]
    fn write(&self, mut file: &File, _path: &Path, buf: &[u8]) -> io::Result<usize> {
        file.write(buf)
    }

    #[inline]
    fn read(&self, mut file: &File, _path: &Path, buf: &mut [u8]) -> io::Result<usize> {
        file.read(buf)
    }

    fn read_to_end(
        &self,
        file: &File,
        _path: &Path,
        out: &mut Vec<u8>,
        limit: u64,
    ) -> io::Result<()> {
        file.take(limit.saturating_sub(out.len() as u64))
            .read_to_end(out)
            .map(drop)
    }

    #[inline]
    fn sync_data(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    #[inline]
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    #[inline]
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    #[inline]
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    #[inline]
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    #[inline]
    fn sync_fs(&self, dir: &Path) -> io::Result<()> {
        real_sync_fs(dir)
    }
}

/// How a new file is opened: for writing, never over an existing one, `rw-r--r--` (checkpoints
/// are ordinary documents, meant for git).
pub(crate) fn new_file_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o644);
    }
    o
}

#[cfg(target_os = "linux")]
pub(crate) fn real_sync_fs(dir: &Path) -> io::Result<()> {
    let d = File::open(dir)?;
    rustix::fs::syncfs(&d).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn real_sync_fs(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes all of `buf` through `fs`, going on after short writes (`write(2)` may write less
/// than asked without failing).
pub fn write_all<F: Fs>(fs: &F, file: &File, path: &Path, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match fs.write(file, path, buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes zeros through `fs` from `from` (where `file` is positioned) up to `to` bytes, one
/// page per write: the page cache then holds them in single pages. Linux (6.16 on) gives ext4
/// files folios as large as the writes that create them, and a later small write into a page
/// of a large folio walks all of the folio's block buffers: a file preallocated in 1 MiB writes
/// took 15–21 µs per 2–3 KB append, in page-sized ones 10–11 (docs/benchmarks.md). What the
/// journal's slot is made with, and the bench's floors, as SQLite's log (written a frame at a
/// time) has small folios too.
pub fn write_zeros<F: Fs>(fs: &F, file: &File, path: &Path, from: u64, to: u64) -> io::Result<()> {
    const PAGE: usize = 4096;
    let zeros = [0u8; PAGE];
    let mut at = from;
    while at < to {
        let n = (to - at).min(PAGE as u64) as usize;
        write_all(fs, file, path, &zeros[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// Reads the rest of `file` through `fs` into `out`, at most `limit` bytes.
pub(crate) fn read_to_end<F: Fs>(
    fs: &F,
    file: &File,
    path: &Path,
    out: &mut Vec<u8>,
    limit: u64,
) -> io::Result<()> {
    fs.read_to_end(file, path, out, limit)
}

/// Creates `dir` and its missing parents so that they survive a power loss: each directory
/// made is flushed into its parent (`fsync` of the parent). Existing directories cost nothing
/// but a `stat`. A store's directory and its `.caf/` are made this way: the files a store
/// flushes are only as durable as the directory entries that lead to them.
pub(crate) fn create_dir_durable<F: Fs>(fs: &F, dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !a.is_dir())
        .collect();
    fs.create_dir_all(dir)?;
    for made in missing.iter().rev() {
        fs.sync_dir(&parent_dir(made))?;
    }
    Ok(())
}

/// The directory of `target` (`.` for a bare name).
pub(crate) fn parent_dir(target: &Path) -> PathBuf {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// Whether `a` (from `symlink_metadata`) and `b` (of an open file) are the same regular file:
/// nothing swapped the name between the check and the open.
#[cfg(unix)]
pub(crate) fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino() && b.is_file()
}

#[cfg(not(unix))]
pub(crate) fn same_file(_a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    b.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Fault, Op, TestFs};

    #[test]
    fn the_real_file_system_costs_no_space() {
        assert_eq!(std::mem::size_of::<RealFs>(), 0);
        assert_eq!(
            std::mem::size_of::<crate::FileStore>(),
            std::mem::size_of::<crate::FileStore<RealFs>>()
        );
    }

    #[test]
    fn write_all_goes_on_after_a_short_write() {
        let dir = tempfile::tempdir().unwrap();
        let fs = TestFs::new();
        let path = dir.path().join("f");
        let file = fs.create_new(&path).unwrap();
        fs.arm(1, Fault::ShortWrite, false);
        write_all(&fs, &file, &path, b"0123456789").unwrap();
        assert!(fs.disarm().is_some(), "the first write was short");
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
    }

    #[test]
    fn a_directory_made_durably_is_flushed_into_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let fs = TestFs::new();
        fs.record(None);
        let made = dir.path().join("a").join("b");
        create_dir_durable(&fs, &made).unwrap();
        create_dir_durable(&fs, &made).unwrap(); // there already: nothing more
        let ops: Vec<Op> = fs.records().into_iter().map(|r| r.op).collect();
        let a = dir.path().join("a");
        assert_eq!(
            ops,
            vec![
                Op::Mkdir { path: a.clone() },
                Op::Mkdir { path: made.clone() },
                Op::SyncDir {
                    path: dir.path().to_path_buf()
                },
                Op::SyncDir { path: a },
            ]
        );
    }
}
