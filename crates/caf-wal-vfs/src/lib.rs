//! A SQLite VFS that hands each transaction's write-ahead-log frames to the kernel in one write.
//!
//! SQLite in WAL mode writes every page of a commit as a frame of the log, with two `pwrite`s
//! each (the frame's 24-byte header, then the page). A caf save changes some twenty pages, so
//! its commit made about forty system calls, each a small write into the page cache. On ext4
//! with large folios (Linux 6.16 and later) every such write walks the buffers of its folio:
//! measured on this project's machines, forty small writes took ~150 µs where one write of the
//! same bytes took ~10 (docs/benchmarks.md, 2026-11-25).
//!
//! This VFS is the platform's default VFS (`unix` on Linux) with one change: the log file
//! ([`SQLITE_OPEN_WAL`](libsqlite3_sys::SQLITE_OPEN_WAL)) gathers appended writes in memory and
//! writes them at once (`wal_file`). The file's bytes, the locks and the shared memory are
//! exactly the default VFS's, so processes that use it and processes that do not share a
//! database as before. When the gathered frames reach the file:
//!
//! - at the last write of a commit (the page of the frame whose header holds the commit mark),
//!   so a commit's frames are in the file before SQLite publishes the commit in the wal-index;
//!   a failed write fails that commit, which SQLite then rolls back;
//! - before anything else is done with the log file (read, sync, truncate, size, file control,
//!   close);
//! - before a write anywhere but at the end of the gathered bytes (SQLite rewriting a frame of
//!   the open transaction, or starting the log over), which then goes straight to the file;
//! - when a megabyte is gathered (a large transaction);
//! - before the connection gives up the log's write lock, or leaves exclusive locking mode, or
//!   unmaps the shared memory (seen on the database file, which is wrapped for that alone:
//!   `db_file`): frames of a transaction that spilled pages into the log and then rolled back
//!   are written where the default VFS would have written them, before another connection may
//!   write there.
//!
//! Only `unix`, `unix-excl`, `win32` and `win32-longpath` are wrapped (they have shared memory,
//! which a wrapped file claims, and ignore the VFS pointer they are called with); with another
//! default VFS, [`register`] returns `None`.
//!
//! The log gathers only when a frame's header is always written by itself, as SQLite does
//! unless it pads commits to a sector boundary (`synchronous = FULL` on a file without
//! `SQLITE_IOCAP_POWERSAFE_OVERWRITE`, e.g. `psow=0`): then, and when the log is not opened
//! beside a database file of this VFS, every write goes straight to the file.
//!
//! Gathered bytes are written in pieces of at most 124 KiB, as the unix VFS takes no more per
//! call: a caf save at step 100 (about 88 KB of frames) is one write.
//!
//! Nothing is flushed to disk any differently: `fsync` stays where SQLite (or caf's group
//! commit) puts it, and a crash loses at most frames of a transaction that never committed.
//!
//! This is the only crate of caf with `unsafe` code: a VFS is a table of C callbacks.

use libsqlite3_sys as ffi;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The methods of a wrapped file: the functions `x_close`, `x_read`, … of the module it is
/// used in (each wrapper defines all of them).
macro_rules! io_methods {
    () => {
        libsqlite3_sys::sqlite3_io_methods {
            iVersion: 3,
            xClose: Some(x_close),
            xRead: Some(x_read),
            xWrite: Some(x_write),
            xTruncate: Some(x_truncate),
            xSync: Some(x_sync),
            xFileSize: Some(x_file_size),
            xLock: Some(x_lock),
            xUnlock: Some(x_unlock),
            xCheckReservedLock: Some(x_check_reserved_lock),
            xFileControl: Some(x_file_control),
            xSectorSize: Some(x_sector_size),
            xDeviceCharacteristics: Some(x_device_characteristics),
            xShmMap: Some(x_shm_map),
            xShmLock: Some(x_shm_lock),
            xShmBarrier: Some(x_shm_barrier),
            xShmUnmap: Some(x_shm_unmap),
            xFetch: Some(x_fetch),
            xUnfetch: Some(x_unfetch),
        }
    };
}
pub(crate) use io_methods;

mod db_file;
mod wal_file;

/// The `xOpen` of the default VFS.
pub(crate) type OpenFn = unsafe extern "C" fn(
    *mut ffi::sqlite3_vfs,
    ffi::sqlite3_filename,
    *mut ffi::sqlite3_file,
    c_int,
    *mut c_int,
) -> c_int;

/// Where the default VFS's file starts in a file of this VFS: after the wrapper (a
/// [`wal_file::WalFile`] or [`db_file::DbFile`]), at a multiple of 16 bytes (SQLite's allocations
/// and both wrappers are 8-aligned, as is the default VFS's file).
pub(crate) const OFFSET: usize = 128;

/// The name the VFS is registered under: open a database with `?vfs=caf-wal` in its URI.
pub const NAME: &str = "caf-wal";
const NAME_C: &CStr = c"caf-wal";

/// Whether the VFS is registered (decided once per process).
static REGISTERED: OnceLock<bool> = OnceLock::new();

/// Registers the VFS (once per process; later calls return at once) and returns its name, or
/// `None` if SQLite has no default VFS to build it on or would not register it (then open
/// databases without it: they work the same, with more system calls).
pub fn register() -> Option<&'static str> {
    // SAFETY: `build` reads SQLite's default VFS and registers a copy; SQLite is initialized by
    // `sqlite3_vfs_find`, and the copy lives until the process ends.
    REGISTERED
        .get_or_init(|| unsafe { build() }.is_some())
        .then_some(NAME)
}

/// Builds and registers the VFS: a copy of the default VFS whose `xOpen` wraps log and main
/// database files.
unsafe fn build() -> Option<()> {
    // SAFETY: with a null name, the default VFS (initializing SQLite first).
    let real = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if real.is_null() {
        return None;
    }
    // SAFETY: `real` points to a registered VFS, which SQLite never frees; its name is a C
    // string.
    let name = unsafe { CStr::from_ptr((*real).zName) }.to_bytes();
    // These ignore the VFS they are called with, but for `xOpen` (given the real one), and
    // support shared memory, which a wrapped file claims: not so an application's own default
    // VFS, or `unix-dotfile` and the other unix VFSs without shared memory.
    if !matches!(name, b"unix" | b"unix-excl" | b"win32" | b"win32-longpath") {
        return None;
    }
    // SAFETY: as above.
    let mut vfs = unsafe { std::ptr::read(real) };
    // SAFETY: as above.
    let real_size = unsafe { (*real).szOsFile };
    vfs.szOsFile = real_size.checked_add(OFFSET as c_int)?;
    vfs.pNext = std::ptr::null_mut();
    vfs.zName = NAME_C.as_ptr();
    // Every other method of the copy is the default VFS's own, called with this VFS: they use
    // neither `pAppData` nor `zName` (`xOpen`, which does, is called with the real one).
    vfs.pAppData = real.cast::<c_void>();
    vfs.xOpen = Some(open);
    let vfs = Box::into_raw(Box::new(vfs));
    // SAFETY: `vfs` is a valid VFS that lives for the rest of the process (never freed once
    // registered: SQLite keeps a pointer to it).
    if unsafe { ffi::sqlite3_vfs_register(vfs, 0) } != ffi::SQLITE_OK {
        // SAFETY: not registered, so nothing else holds it.
        drop(unsafe { Box::from_raw(vfs) });
        return None;
    }
    Some(())
}

/// `xOpen`: the default VFS's, with log and main database files wrapped.
unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: `vfs` is the VFS `build` registered, whose `pAppData` is the default VFS.
    let real = unsafe { (*vfs).pAppData.cast::<ffi::sqlite3_vfs>() };
    // SAFETY: as above.
    let Some(real_open) = (unsafe { (*real).xOpen }) else {
        // SAFETY: SQLite passes `file` with room for `szOsFile` bytes.
        unsafe { (*file).pMethods = std::ptr::null() };
        return ffi::SQLITE_CANTOPEN;
    };
    let wal = flags & ffi::SQLITE_OPEN_WAL != 0 && !name.is_null();
    if !wal && flags & ffi::SQLITE_OPEN_MAIN_DB == 0 {
        // SAFETY: the arguments SQLite gave, to the VFS this one copies.
        return unsafe { real_open(real, name, file, flags, out_flags) };
    }
    // SAFETY: the arguments SQLite gave; `file` has room for OFFSET bytes more than the default
    // VFS's file.
    let (rc, inner) = unsafe { open_inner(real, real_open, name, file, flags, out_flags) };
    let Some(inner) = inner else {
        return rc;
    };
    if wal {
        // SAFETY: `file` is the allocation SQLite passed, `inner` opened in it, `name` SQLite's.
        unsafe { wal_file::wrap(file, inner, name) };
    } else {
        // SAFETY: as above.
        unsafe { db_file::wrap(file, inner) };
    }
    rc
}

/// Opens the default VFS's file OFFSET bytes into `file`: `(rc, Some(that file))` when it is
/// open, else `(rc, None)` with `file` left without methods.
///
/// # Safety
/// `file` must have room for OFFSET bytes plus the default VFS's `szOsFile`, and the other
/// arguments be what SQLite passed to `xOpen`.
pub(crate) unsafe fn open_inner(
    real: *mut ffi::sqlite3_vfs,
    real_open: OpenFn,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> (c_int, Option<*mut ffi::sqlite3_file>) {
    // SAFETY: `file` has room for OFFSET bytes and the default VFS's file after them.
    let inner = unsafe { file.cast::<u8>().add(OFFSET).cast::<ffi::sqlite3_file>() };
    // SAFETY: `inner` is within the allocation and 8-aligned (SQLite's allocation is, and
    // OFFSET is a multiple of 16); the default VFS sets its methods when it opens the file.
    unsafe { (*inner).pMethods = std::ptr::null() };
    // SAFETY: the arguments SQLite gave, with the default VFS's part of the memory.
    let rc = unsafe { real_open(real, name, inner, flags, out_flags) };
    // SAFETY: `inner` was set above and possibly by `real_open`.
    let opened = unsafe { !(*inner).pMethods.is_null() };
    if rc == ffi::SQLITE_OK && opened {
        return (rc, Some(inner));
    }
    if opened {
        // SAFETY: the default VFS opened it; close it, as SQLite will not (below).
        unsafe { close_real(inner) };
    }
    // SAFETY: SQLite will then not call this file's methods.
    unsafe { (*file).pMethods = std::ptr::null() };
    let rc = if rc == ffi::SQLITE_OK {
        ffi::SQLITE_CANTOPEN
    } else {
        rc
    };
    (rc, None)
}

/// Closes a file of the default VFS.
///
/// # Safety
/// `real` must be an open file of the default VFS.
pub(crate) unsafe fn close_real(real: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file has methods.
    match unsafe { (*(*real).pMethods).xClose } {
        // SAFETY: as above.
        Some(close) => unsafe { close(real) },
        None => ffi::SQLITE_OK,
    }
}

/// How many writes the log files of this process were given, and how many they made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Writes SQLite asked of log files opened through this VFS.
    pub asked: u64,
    /// Writes those files made to the operating system.
    pub made: u64,
    /// Writes made straight, not gathered: anywhere but at the end of the last write (the log
    /// started over, or SQLite rewriting frames of the open transaction).
    pub straight: u64,
    /// Bytes gathered and not written yet, in all those files: none once a commit returned.
    pub gathered: u64,
}

static ASKED: AtomicU64 = AtomicU64::new(0);
static MADE: AtomicU64 = AtomicU64::new(0);
static GATHERED: AtomicU64 = AtomicU64::new(0);
static STRAIGHT: AtomicU64 = AtomicU64::new(0);

/// The writes of every log file opened through this VFS in this process so far.
pub fn stats() -> Stats {
    Stats {
        asked: ASKED.load(Ordering::Relaxed),
        made: MADE.load(Ordering::Relaxed),
        straight: STRAIGHT.load(Ordering::Relaxed),
        gathered: GATHERED.load(Ordering::Relaxed),
    }
}
