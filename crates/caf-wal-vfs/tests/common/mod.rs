//! What the tests of the `caf-wal` VFS share: opening a database through it or SQLite's default
//! VFS, a table of page-sized rows, and the image a crash leaves.

#![allow(dead_code)]

use caf_wal_vfs::{register, stats};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The write counters are per process: tests that read them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The table the tests write: a value and a page-sized body per row.
pub const TABLE: &str = "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, body BLOB);";

/// A new database `t.db` in `dir` with the table, opened through this VFS.
pub fn new_database(dir: &Path) -> (PathBuf, SqliteConnection) {
    let path = dir.join("t.db");
    let mut c = open(&path, true);
    c.batch_execute(TABLE).expect("create the table");
    (path, c)
}

/// Opens `path` in WAL mode, through this VFS or SQLite's default one.
pub fn open(path: &Path, through_caf_wal: bool) -> SqliteConnection {
    let vfs = if through_caf_wal {
        format!("?vfs={}", register().expect("the VFS registers"))
    } else {
        String::new()
    };
    let mut c = SqliteConnection::establish(&format!("file:{}{vfs}", path.display()))
        .expect("the database opens");
    c.batch_execute(
        "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
    )
    .expect("pragmas");
    c
}

#[derive(QueryableByName)]
pub struct Count {
    #[diesel(sql_type = BigInt)]
    pub n: i64,
}

#[derive(QueryableByName)]
pub struct Check {
    #[diesel(sql_type = Text)]
    pub integrity_check: String,
}

pub fn rows(c: &mut SqliteConnection) -> i64 {
    diesel::sql_query("SELECT count(*) AS n FROM t")
        .get_result::<Count>(c)
        .expect("count")
        .n
}

pub fn sum(c: &mut SqliteConnection) -> i64 {
    diesel::sql_query("SELECT coalesce(sum(v), 0) AS n FROM t")
        .get_result::<Count>(c)
        .expect("sum")
        .n
}

pub fn assert_intact(c: &mut SqliteConnection) {
    let found = diesel::sql_query("PRAGMA integrity_check")
        .get_result::<Check>(c)
        .expect("integrity_check");
    assert_eq!(found.integrity_check, "ok");
}

/// Inserts `count` rows of a 3000-byte blob each (a page apiece) in one transaction.
pub fn insert(c: &mut SqliteConnection, count: u32, v: i64) {
    c.batch_execute(&format!(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {count}) \
         INSERT INTO t (v, body) SELECT {v}, randomblob(3000) FROM s;"
    ))
    .expect("insert");
    assert_nothing_gathered();
}

/// Once a commit returned, every byte of it is in the file.
pub fn assert_nothing_gathered() {
    assert_eq!(
        stats().gathered,
        0,
        "bytes gathered once the transaction ended"
    );
}

/// What a crash leaves of `dir`'s database (the process killed, the kernel's page cache kept):
/// the database and log files as they are, copied elsewhere with no wal-index, so that opening
/// the copy recovers from the log alone, checking every frame's checksum.
pub fn crash_image(db: &Path, to: &Path) -> PathBuf {
    let copy = to.join("copy.db");
    std::fs::copy(db, &copy).expect("copy the database");
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    std::fs::copy(&wal, to.join("copy.db-wal")).expect("copy the log");
    copy
}
