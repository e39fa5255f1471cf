//! Exclusive locking mode: the connection writes the log without taking the log's write lock,
//! so a rolled-back spill's gathered frames are written when it leaves the mode, before
//! another connection may write the log. In a process of its own, so that nothing else shapes
//! SQLite's page cache.

mod common;

use caf_wal_vfs::stats;
use common::*;
use diesel::connection::SimpleConnection;

#[test]
fn leaving_exclusive_mode_writes_what_a_rollback_left_gathered() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, mut ours) = new_database(dir.path());
    insert(&mut ours, 40, 1);
    ours.batch_execute("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
    ours.batch_execute(
        "PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = 2; BEGIN; \
         WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30) \
         INSERT INTO t (v, body) SELECT 7, randomblob(3000) FROM s;",
    )
    .expect("spilling insert");
    assert!(stats().gathered > 0, "the spilled frames are gathered");
    ours.batch_execute("ROLLBACK;").expect("rollback");
    // Leaving exclusive mode: the next transaction ends by unlocking the database file.
    ours.batch_execute("PRAGMA locking_mode = NORMAL; BEGIN IMMEDIATE; COMMIT;")
        .expect("leave exclusive mode");
    assert_nothing_gathered();
    let mut theirs = open(&path, false);
    insert(&mut theirs, 30, 2);
    assert_eq!(rows(&mut ours), 70);
    assert_eq!(sum(&mut ours), 40 + 60);
    drop(ours);
    let mut again = open(&path, false);
    assert_eq!(sum(&mut again), 40 + 60);
    assert_intact(&mut again);
}
