//! A database file: the default VFS's, seen through a wrapper for one reason — to see when its
//! connection gives up the log's write lock (`xShmLock` on lock 0, `WAL_WRITE_LOCK`).
//!
//! Frames SQLite wrote before a commit (a transaction larger than its page cache spills pages
//! into the log) may still be gathered then, if the transaction rolled back: nothing is
//! written to the log at a rollback. Another connection may write its own frames at the same
//! offsets as soon as the lock is free, so the gathered bytes are written before it is given
//! up, while nothing else can write the log. They lie past the log's last commit there, where
//! the default VFS would have put them anyway, and the next transaction writes over them.

use crate::wal_file::{self, WalFile};
use crate::OFFSET;
use libsqlite3_sys as ffi;
use std::ffi::{c_int, c_void};

/// A database file: SQLite sees `base` (whose methods are [`METHODS`]); `real` is the default
/// VFS's file, in the same allocation; `wal` the log file open beside it through this VFS, if
/// any (set and cleared by the log file).
#[repr(C)]
pub(crate) struct DbFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    pub(crate) wal: *mut WalFile,
}

/// The lock SQLite's write-ahead log takes to write (`WAL_WRITE_LOCK`, the first of the
/// shared-memory locks).
const WAL_WRITE_LOCK: c_int = 0;

/// Makes `file` a database file of this VFS around `inner`, the default VFS's file opened in
/// the same allocation ([`crate::open_inner`]).
///
/// # Safety
/// `file` must be the start of the allocation SQLite passed to `xOpen`, and `inner` the open
/// file in it.
pub(crate) unsafe fn wrap(file: *mut ffi::sqlite3_file, inner: *mut ffi::sqlite3_file) {
    // SAFETY: `file` is at the start of the allocation, aligned for a `DbFile` (SQLite's
    // allocations are 8-aligned, as is a `DbFile`), and nothing there needs dropping.
    unsafe {
        file.cast::<DbFile>().write(DbFile {
            base: ffi::sqlite3_file { pMethods: &METHODS },
            real: inner,
            wal: std::ptr::null_mut(),
        })
    };
}

/// The file behind SQLite's pointer.
///
/// # Safety
/// `file` must be a database file opened by [`open`] and not closed.
unsafe fn this<'a>(file: *mut ffi::sqlite3_file) -> &'a mut DbFile {
    // SAFETY: per the contract; SQLite uses a file from one thread at a time.
    unsafe { &mut *file.cast::<DbFile>() }
}

/// Whether `file` is a database file of this VFS.
pub(crate) fn is_ours(file: *mut ffi::sqlite3_file) -> bool {
    // SAFETY: a file SQLite hands out has methods, or none (then it is not ours).
    !file.is_null() && std::ptr::eq(unsafe { (*file).pMethods }, &METHODS)
}

/// Whether SQLite writes each frame header of the log beside `file` by itself: it does unless
/// it pads commits to a sector boundary, which it does for a database file without
/// `SQLITE_IOCAP_POWERSAFE_OVERWRITE` (`psow=0`; SQLite reads it when it opens the log).
///
/// # Safety
/// `file` must be a database file opened by [`open`] and not closed.
pub(crate) unsafe fn overwrites_safely(file: *mut ffi::sqlite3_file) -> bool {
    // SAFETY: per the contract.
    let f = unsafe { this(file) };
    match real_methods(f).xDeviceCharacteristics {
        // SAFETY: the default VFS's file is open.
        Some(characteristics) => {
            // SAFETY: as above.
            let found = unsafe { characteristics(f.real) };
            found & ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE != 0
        }
        None => false,
    }
}

/// The default VFS's methods of `f`.
fn real_methods(f: &DbFile) -> &ffi::sqlite3_io_methods {
    // SAFETY: the default VFS's file is open while `f` is, with methods that live as long.
    unsafe { &*(*f.real).pMethods }
}

/// Defines a method that does the default VFS's (after `$before(f)`, when given).
macro_rules! forward {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*), $absent:expr $(, $before:ident)?) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite calls this with a file this VFS opened.
            let f = unsafe { this(file) };
            $($before(f);)?
            match real_methods(f).$method {
                // SAFETY: SQLite's arguments, passed on to the default VFS's file.
                Some(method) => unsafe { method(f.real $(, $arg)*) },
                None => $absent,
            }
        }
    };
}

forward!(x_read, xRead, (buf: *mut c_void, amount: c_int, offset: i64), ffi::SQLITE_IOERR);
forward!(x_write, xWrite, (buf: *const c_void, amount: c_int, offset: i64), ffi::SQLITE_IOERR);
forward!(x_truncate, xTruncate, (size: i64), ffi::SQLITE_IOERR);
forward!(x_sync, xSync, (flags: c_int), ffi::SQLITE_IOERR);
forward!(x_file_size, xFileSize, (size: *mut i64), ffi::SQLITE_IOERR);
forward!(x_lock, xLock, (level: c_int), ffi::SQLITE_IOERR);
forward!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int), ffi::SQLITE_IOERR);
forward!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void), ffi::SQLITE_NOTFOUND);
forward!(x_sector_size, xSectorSize, (), 4096);
forward!(x_device_characteristics, xDeviceCharacteristics, (), 0);
forward!(
    x_shm_map,
    xShmMap,
    (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void),
    ffi::SQLITE_IOERR
);
forward!(x_fetch, xFetch, (offset: i64, amount: c_int, out: *mut *mut c_void), {
    // No memory map: SQLite reads instead.
    // SAFETY: SQLite passes a pointer to write the mapping's address to.
    unsafe { *out = std::ptr::null_mut() };
    ffi::SQLITE_OK
});
forward!(x_unfetch, xUnfetch, (offset: i64, page: *mut c_void), ffi::SQLITE_OK);

/// Writes what the log beside `f` gathered, if anything: the connection is giving up a lock
/// that kept other connections from writing the log.
fn release_log(f: &DbFile) {
    if !f.wal.is_null() {
        // SAFETY: the log file clears `wal` when it closes.
        unsafe { wal_file::write_lock_released(f.wal) };
    }
}

// In WAL mode the database file is unlocked only when the connection leaves exclusive locking
// mode (`PRAGMA locking_mode`), where it writes the log without taking the log's write lock;
// the shared memory is unmapped, with its locks, when the log closes. What is gathered is
// written first in both.
forward!(x_unlock, xUnlock, (level: c_int), ffi::SQLITE_IOERR, release_log);
forward!(x_shm_unmap, xShmUnmap, (delete: c_int), ffi::SQLITE_OK, release_log);

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: SQLite calls this with a file this VFS opened.
    let f = unsafe { this(file) };
    let releases_write = flags == ffi::SQLITE_SHM_UNLOCK | ffi::SQLITE_SHM_EXCLUSIVE
        && offset <= WAL_WRITE_LOCK
        && WAL_WRITE_LOCK < offset.saturating_add(n);
    if releases_write {
        release_log(f);
    }
    match real_methods(f).xShmLock {
        // SAFETY: SQLite's arguments, passed on to the default VFS's file.
        Some(method) => unsafe { method(f.real, offset, n, flags) },
        None => ffi::SQLITE_IOERR,
    }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite calls this with a file this VFS opened.
    let f = unsafe { this(file) };
    if let Some(method) = real_methods(f).xShmBarrier {
        // SAFETY: the default VFS's file is open.
        unsafe { method(f.real) }
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this with a file this VFS opened, once.
    let f = unsafe { this(file) };
    if !f.wal.is_null() {
        // SAFETY: the log file is open (it clears `wal` when it closes).
        unsafe { wal_file::forget_db(f.wal) };
        f.wal = std::ptr::null_mut();
    }
    let real = f.real;
    // SAFETY: the default VFS's file is open until now.
    let closed = unsafe { crate::close_real(real) };
    // SAFETY: closed: SQLite must not call its methods again.
    unsafe { (*file).pMethods = std::ptr::null() };
    closed
}

/// The methods of a database file of this VFS.
static METHODS: ffi::sqlite3_io_methods = crate::io_methods!();

/// The offset of the default VFS's file in a database file of this VFS fits [`OFFSET`].
const _: () = assert!(std::mem::size_of::<DbFile>() <= OFFSET);
