//! A commit whose gathered frames cannot be written (no space left): the commit fails, nothing
//! stays gathered, and the next commit works. The failure is made by replacing the unix VFS's
//! `pwrite` (`xSetSystemCall`), for this process alone.

#![cfg(unix)]

mod common;

use caf_wal_vfs::stats;
use common::*;
use diesel::connection::SimpleConnection;
use libsqlite3_sys as ffi;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static FULL: AtomicBool = AtomicBool::new(false);
static REAL_PWRITE: AtomicUsize = AtomicUsize::new(0);

type Pwrite = unsafe extern "C" fn(c_int, *const c_void, usize, i64) -> isize;

/// `pwrite`, failing with `ENOSPC` while [`FULL`] is set for writes of more than a sector.
unsafe extern "C" fn pwrite_on_a_full_disk(
    fd: c_int,
    buf: *const c_void,
    n: usize,
    offset: i64,
) -> isize {
    if FULL.load(Ordering::SeqCst) && n > 512 {
        // SAFETY: the calling thread's errno.
        unsafe { *libc_errno() = 28 };
        return -1;
    }
    // SAFETY: REAL_PWRITE holds the unix VFS's own `pwrite`, stored before this was installed.
    let real: Pwrite = unsafe { std::mem::transmute(REAL_PWRITE.load(Ordering::SeqCst)) };
    // SAFETY: the caller's arguments.
    unsafe { real(fd, buf, n, offset) }
}

extern "C" {
    #[cfg_attr(target_os = "linux", link_name = "__errno_location")]
    #[cfg_attr(not(target_os = "linux"), link_name = "__error")]
    fn libc_errno() -> *mut c_int;
}

#[test]
fn a_commit_that_finds_the_disk_full_fails_and_the_next_one_works() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, mut ours) = new_database(dir.path());
    insert(&mut ours, 5, 1);
    // SAFETY: the unix VFS and its system-call table, swapped before the failing commit.
    unsafe {
        let unix = ffi::sqlite3_vfs_find(c"unix".as_ptr());
        assert!(!unix.is_null());
        let get = (*unix).xGetSystemCall.expect("xGetSystemCall");
        let set = (*unix).xSetSystemCall.expect("xSetSystemCall");
        let real = get(unix, c"pwrite".as_ptr()).expect("pwrite");
        REAL_PWRITE.store(real as usize, Ordering::SeqCst);
        let ours: unsafe extern "C" fn() =
            std::mem::transmute::<Pwrite, unsafe extern "C" fn()>(pwrite_on_a_full_disk);
        assert_eq!(set(unix, c"pwrite".as_ptr(), Some(ours)), ffi::SQLITE_OK);
    }
    FULL.store(true, Ordering::SeqCst);
    let failed = ours.batch_execute(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 10) \
         INSERT INTO t (v, body) SELECT 2, randomblob(3000) FROM s;",
    );
    FULL.store(false, Ordering::SeqCst);
    let error = failed.expect_err("the commit fails").to_string();
    assert!(error.contains("full"), "{error}");
    assert_eq!(stats().gathered, 0);
    insert(&mut ours, 3, 3);
    let mut theirs = open(&path, false);
    assert_eq!(rows(&mut theirs), 8);
    assert_eq!(sum(&mut theirs), 5 + 9);
    assert_intact(&mut theirs);
}
