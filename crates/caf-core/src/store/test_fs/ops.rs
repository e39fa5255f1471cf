//! What [`TestFs`](super::TestFs) fails and records: kinds of operations, faults, records.

use std::io;
use std::path::PathBuf;

/// The kind of an operation of the seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `create_dir_all`.
    CreateDir,
    /// Creating a new file.
    CreateNew,
    /// Opening a spare file (empty) to write it.
    OpenSpare,
    /// Opening the index log.
    OpenAppend,
    /// Opening a file to read.
    OpenRead,
    /// Opening a file to write in place (a journal slot).
    OpenInPlace,
    /// `write(2)`.
    Write,
    /// `read(2)`.
    Read,
    /// `fdatasync` of a file.
    SyncData,
    /// `rename(2)`.
    Rename,
    /// `link(2)`.
    HardLink,
    /// `unlink(2)`.
    RemoveFile,
    /// `fsync` of a directory.
    SyncDir,
    /// `syncfs`.
    SyncFs,
}

/// What an armed [`TestFs`](super::TestFs) does to the operation it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Fails with `EIO`.
    Eio,
    /// Fails with `ENOSPC` (the disk is full).
    NoSpace,
    /// Fails with `EACCES`.
    Denied,
    /// A write writes only half of its bytes (at least one) and says so, without failing, as
    /// `write(2)` may; the fault counts writes only.
    ShortWrite,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 4] = [Fault::Eio, Fault::NoSpace, Fault::Denied, Fault::ShortWrite];

    /// The error an operation this fault fails returns (an `errno` on Unix).
    pub fn error(self) -> io::Error {
        let (errno, kind) = match self {
            Fault::Eio => (5, io::ErrorKind::Other),
            Fault::NoSpace => (28, io::ErrorKind::StorageFull),
            Fault::Denied | Fault::ShortWrite => (13, io::ErrorKind::PermissionDenied),
        };
        if cfg!(unix) {
            io::Error::from_raw_os_error(errno)
        } else {
            io::Error::new(kind, format!("injected fault {self:?}"))
        }
    }
}

/// The operation an armed [`TestFs`](super::TestFs) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// Its kind.
    pub op: OpKind,
    /// The file or directory it was about.
    pub path: PathBuf,
    /// The fault.
    pub fault: Fault,
}

/// An operation that changed the file system, as [`TestFs`](super::TestFs) records it. Files
/// are named by inode number, directory entries by path (as the store gave it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A directory was made (one per directory `create_dir_all` made).
    Mkdir {
        /// The directory.
        path: PathBuf,
    },
    /// A file was created, empty, at `path`.
    Create {
        /// Where.
        path: PathBuf,
        /// Its inode.
        ino: u64,
        /// Its modification time afterwards (ns since the epoch).
        mtime_ns: i64,
    },
    /// Bytes were written into a file at `offset`.
    Write {
        /// Its inode.
        ino: u64,
        /// Where.
        offset: u64,
        /// What.
        bytes: Vec<u8>,
        /// Its modification time afterwards.
        mtime_ns: i64,
    },
    /// The entry `from` was renamed over `to`.
    Rename {
        /// The old name.
        from: PathBuf,
        /// The new name.
        to: PathBuf,
        /// The inode moved.
        ino: u64,
    },
    /// The file `ino` got the new name `to` (which did not exist).
    Link {
        /// The new name.
        to: PathBuf,
        /// The inode linked.
        ino: u64,
    },
    /// The entry `path` was removed.
    Unlink {
        /// The entry.
        path: PathBuf,
    },
    /// A file's data was flushed (`fdatasync`).
    SyncFile {
        /// Its inode.
        ino: u64,
    },
    /// A directory's entries were flushed (`fsync` of the directory).
    SyncDir {
        /// The directory.
        path: PathBuf,
    },
    /// The whole file system was flushed (`syncfs`).
    SyncFs,
    /// A note of the test's own ([`TestFs::mark`](super::TestFs::mark)), e.g. "save 3 returned".
    Mark(String),
}

/// One recorded operation and the tag the test's hook gave when it happened (see
/// [`TestFs::record`](super::TestFs::record)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The operation.
    pub op: Op,
    /// What the hook returned just before it (0 without a hook).
    pub tag: u64,
}

/// Called before each recorded operation; what it returns tags the record (a test snapshots
/// its database there and returns the snapshot's number). It runs under the double's lock: it
/// must not use the double.
pub type Hook = Box<dyn FnMut() -> u64 + Send>;
