//! A log file that gathers appended writes and makes them in one (see the crate docs for when).
//!
//! The memory SQLite gives a file of this VFS holds a [`WalFile`] and, after it, the default
//! VFS's own file, which does every read, write and lock.

use crate::db_file::{self, DbFile};
use crate::{close_real, ASKED, GATHERED, MADE, OFFSET, STRAIGHT};
use libsqlite3_sys as ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

/// The size of a frame header in the log (page number, commit mark, salts, checksums).
const FRAME_HEADER: usize = 24;

/// Gathered bytes beyond this are written at once.
const LIMIT: usize = 1 << 20;

/// The most one write of the default VFS is given: the unix VFS writes at most 128 KiB less a
/// byte per call (SQLite itself never asks more than a 64 KiB page of it).
const CHUNK: usize = 124 << 10;

/// A log file: SQLite sees `base` (whose methods are [`METHODS`]); `real` is the default VFS's
/// file, in the same allocation; `db` the database file beside it, when it is of this VFS.
#[repr(C)]
pub(crate) struct WalFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    db: *mut ffi::sqlite3_file,
    /// Whether appended writes are gathered (else every write goes straight to the file).
    gathers: bool,
    gathered: Gathered,
}

/// Appended writes not yet made.
struct Gathered {
    bytes: Vec<u8>,
    /// Where `bytes` start in the file.
    start: i64,
    /// Where the last write (gathered or made) ended: a write there is an append.
    end: i64,
    /// A commit's frame header was written: every write is made at once until the next frame
    /// without a commit mark (the commit's page, and any padding SQLite adds after it).
    eager: bool,
}

const _: () = assert!(std::mem::size_of::<WalFile>() <= OFFSET);

/// Makes `file` a log file of this VFS around `inner`, the default VFS's file opened in the
/// same allocation ([`crate::open_inner`]), linked to its database file if that is of this VFS.
///
/// # Safety
/// `file` must be the start of the allocation SQLite passed to `xOpen`, `inner` the open file
/// in it, and `name` the name SQLite passed (`sqlite3_database_file_object` finds the database
/// file from it).
pub(crate) unsafe fn wrap(
    file: *mut ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    name: ffi::sqlite3_filename,
) {
    // SAFETY: `name` is the log's name as SQLite passed it to `xOpen`.
    let db = unsafe { ffi::sqlite3_database_file_object(name) };
    let db = if db_file::is_ours(db) {
        db
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: `db` is null or an open database file of this VFS.
    let gathers = !db.is_null() && unsafe { db_file::overwrites_safely(db) };
    let outer = file.cast::<WalFile>();
    // SAFETY: `outer` is at the start of the allocation, aligned for a `WalFile` (SQLite's
    // allocations are 8-aligned, as is a `WalFile`), and nothing there needs dropping.
    unsafe {
        outer.write(WalFile {
            base: ffi::sqlite3_file { pMethods: &METHODS },
            real: inner,
            db,
            gathers,
            gathered: Gathered {
                bytes: Vec::new(),
                start: 0,
                end: -1,
                eager: false,
            },
        })
    };
    if !db.is_null() {
        // SAFETY: `db` is an open database file of this VFS; the log clears this when it
        // closes, and the database file clears the log's link when it closes first.
        unsafe { (*db.cast::<DbFile>()).wal = outer };
    }
}

/// The database file's connection is giving up the log's write lock: what is gathered then
/// belongs to no commit (a commit writes its frames at its last one); it is written now,
/// where the default VFS would have written it, while no other connection may write the log.
///
/// # Safety
/// `wal` must be an open log file of this VFS.
pub(crate) unsafe fn write_lock_released(wal: *mut WalFile) {
    // SAFETY: per the contract.
    let f = unsafe { &mut *wal };
    // A failure here has no one to report to (SQLite does not check the unlock); the bytes are
    // those of a transaction that did not commit, and the next one writes over them.
    let _ = flush(f);
}

/// The database file is closing before its log: the log forgets it, and gathers no more.
///
/// # Safety
/// `wal` must be an open log file of this VFS.
pub(crate) unsafe fn forget_db(wal: *mut WalFile) {
    // SAFETY: per the contract.
    let f = unsafe { &mut *wal };
    let _ = flush(f);
    f.gathers = false;
    f.db = std::ptr::null_mut();
}

/// The file behind SQLite's pointer.
///
/// # Safety
/// `file` must be a log file opened by [`open`] and not closed.
unsafe fn this<'a>(file: *mut ffi::sqlite3_file) -> &'a mut WalFile {
    // SAFETY: per the contract; SQLite uses a file from one thread at a time.
    unsafe { &mut *file.cast::<WalFile>() }
}

/// The default VFS's methods of `f`.
fn real_methods(f: &WalFile) -> &ffi::sqlite3_io_methods {
    // SAFETY: the default VFS's file is open while `f` is, with methods that live as long.
    unsafe { &*(*f.real).pMethods }
}

/// Makes the write of the gathered bytes, if any.
fn flush(f: &mut WalFile) -> c_int {
    if f.gathered.bytes.is_empty() {
        return ffi::SQLITE_OK;
    }
    let len = f.gathered.bytes.len();
    let rc = write_real(f, f.gathered.bytes.as_ptr(), len, f.gathered.start);
    GATHERED.fetch_sub(len as u64, Ordering::Relaxed);
    f.gathered.bytes.clear();
    if f.gathered.bytes.capacity() >= 2 * LIMIT {
        f.gathered.bytes = Vec::new();
    }
    rc
}

/// Writes `len` bytes at `data` to the file at `offset`, now, in writes of at most [`CHUNK`].
fn write_real(f: &WalFile, data: *const u8, len: usize, offset: i64) -> c_int {
    let Some(write) = real_methods(f).xWrite else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let mut done = 0;
    while done < len {
        let amount = (len - done).min(CHUNK);
        MADE.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `data` holds `len` bytes; the file is open. `amount` ≤ CHUNK fits a c_int.
        let rc = unsafe {
            write(
                f.real,
                data.add(done).cast::<c_void>(),
                amount as c_int,
                offset + done as i64,
            )
        };
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        done += amount;
    }
    ffi::SQLITE_OK
}

/// Whether `bytes` is a frame header with a commit mark (the database's size in pages after
/// the commit, non-zero only in a commit's last frame).
fn commit_header(bytes: &[u8]) -> bool {
    bytes.len() == FRAME_HEADER && bytes[4..8] != [0, 0, 0, 0]
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    ASKED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: SQLite calls this with a file this VFS opened.
    let f = unsafe { this(file) };
    let len = usize::try_from(amount).unwrap_or(0);
    if len == 0 || data.is_null() {
        return ffi::SQLITE_OK;
    }
    // SAFETY: SQLite passes `amount` readable bytes at `data`.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    let end = offset.saturating_add(len as i64);
    let append = offset == f.gathered.end;
    f.gathered.end = end;
    if len == FRAME_HEADER {
        f.gathered.eager = commit_header(bytes);
    }
    if !append || !f.gathers {
        // Not an append (the log started over, a frame of this transaction rewritten, the
        // checksums after it rewritten at the commit; another process wrote last), or a log
        // that does not gather: what is gathered goes first, then this, straight to the file.
        let rc = flush(f);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        STRAIGHT.fetch_add(1, Ordering::Relaxed);
        return write_real(f, bytes.as_ptr(), len, offset);
    }
    if f.gathered.bytes.is_empty() {
        f.gathered.start = offset;
    }
    f.gathered.bytes.extend_from_slice(bytes);
    GATHERED.fetch_add(len as u64, Ordering::Relaxed);
    if len == FRAME_HEADER && f.gathered.eager {
        // A commit's last frame: its page comes next, and is written with it.
        return ffi::SQLITE_OK;
    }
    if f.gathered.eager || f.gathered.bytes.len() >= LIMIT {
        return flush(f);
    }
    ffi::SQLITE_OK
}

/// Defines a method that writes what is gathered, then does the default VFS's.
macro_rules! flushing {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            // SAFETY: SQLite calls this with a file this VFS opened.
            let f = unsafe { this(file) };
            let rc = flush(f);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match real_methods(f).$method {
                // SAFETY: SQLite's arguments, passed on to the default VFS's file.
                Some(method) => unsafe { method(f.real $(, $arg)*) },
                None => ffi::SQLITE_IOERR,
            }
        }
    };
}

flushing!(x_read, xRead, (buf: *mut c_void, amount: c_int, offset: i64));
flushing!(x_truncate, xTruncate, (size: i64));
flushing!(x_sync, xSync, (flags: c_int));
flushing!(x_file_size, xFileSize, (size: *mut i64));
flushing!(x_lock, xLock, (level: c_int));
flushing!(x_unlock, xUnlock, (level: c_int));
flushing!(x_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
flushing!(x_file_control, xFileControl, (op: c_int, arg: *mut c_void));
flushing!(x_shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
flushing!(x_shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int));
flushing!(x_shm_unmap, xShmUnmap, (delete: c_int));
flushing!(x_fetch, xFetch, (offset: i64, amount: c_int, out: *mut *mut c_void));
flushing!(x_unfetch, xUnfetch, (offset: i64, page: *mut c_void));

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let flushed = {
        // SAFETY: SQLite calls this with a file this VFS opened, once.
        let f = unsafe { this(file) };
        flush(f)
    };
    let outer = file.cast::<WalFile>();
    // SAFETY: as above; the `WalFile` is not used again (SQLite frees the memory).
    let (real, db) = unsafe { ((*outer).real, (*outer).db) };
    if !db.is_null() {
        // SAFETY: the database file is open (it clears `db` through `forget_db` if it closes
        // first); it may have a newer log by now (the log reopened).
        let link = unsafe { &mut (*db.cast::<DbFile>()).wal };
        if std::ptr::eq(*link, outer) {
            *link = std::ptr::null_mut();
        }
    }
    // SAFETY: as above: the gathered bytes' buffer is dropped once.
    unsafe { std::ptr::drop_in_place(std::ptr::addr_of_mut!((*outer).gathered)) };
    // SAFETY: the default VFS's file is open until now.
    let closed = unsafe { close_real(real) };
    // SAFETY: closed: SQLite must not call its methods again.
    unsafe { (*file).pMethods = std::ptr::null() };
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this with a file this VFS opened.
    let f = unsafe { this(file) };
    match real_methods(f).xSectorSize {
        // SAFETY: the default VFS's file is open.
        Some(method) => unsafe { method(f.real) },
        None => 4096,
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this with a file this VFS opened.
    let f = unsafe { this(file) };
    match real_methods(f).xDeviceCharacteristics {
        // SAFETY: the default VFS's file is open.
        Some(method) => unsafe { method(f.real) },
        None => 0,
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

/// The methods of a log file of this VFS.
static METHODS: ffi::sqlite3_io_methods = crate::io_methods!();
