//! A database whose commits SQLite pads to a sector boundary (`psow=0`, `synchronous = FULL`):
//! SQLite then splits frame headers and pages at the sector's end, so the log cannot tell a
//! header by its length, and gathers nothing.

mod common;

use caf_wal_vfs::{register, stats};
use common::*;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;

#[test]
fn padded_commits_go_straight_to_the_file() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let vfs = register().expect("the VFS registers");
    let mut ours =
        SqliteConnection::establish(&format!("file:{}?vfs={vfs}&psow=0", path.display()))
            .expect("open");
    ours.batch_execute(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0; \
         CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, body BLOB);",
    )
    .expect("create");
    let mut theirs = open(&path, false);
    let before = stats();
    for i in 0..200i64 {
        let k = 1 + i % 3;
        // Pages of zeros: a piece of one can look like a frame header without a commit mark.
        ours.batch_execute(&format!(
            "WITH RECURSIVE s(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM s WHERE j < {k}) \
             INSERT INTO t (v, body) SELECT {i}, zeroblob(5000 * {k}) FROM s;"
        ))
        .expect("insert");
        assert_nothing_gathered();
    }
    let after = stats();
    assert_eq!(
        after.made - before.made,
        after.asked - before.asked,
        "every write made as asked"
    );
    assert_eq!(
        sum(&mut theirs),
        (0..200i64).map(|i| i * (1 + i % 3)).sum::<i64>()
    );
    assert_intact(&mut theirs);
}
