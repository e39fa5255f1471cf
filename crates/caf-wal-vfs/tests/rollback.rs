//! A transaction that spilled frames into the log, then rolled back: its frames must not reach
//! the log after another connection wrote its own commit there. In a process of its own, so
//! that nothing else shapes SQLite's page cache.

mod common;

use caf_wal_vfs::stats;
use common::*;
use diesel::connection::SimpleConnection;

#[test]
fn frames_of_a_rolled_back_transaction_never_overwrite_a_later_commit() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, mut ours) = new_database(dir.path());
    let mut theirs = open(&path, false);
    insert(&mut ours, 40, 1);
    ours.batch_execute("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
    // A page cache of two pages: the inserts write frames into the log before any commit.
    let before = stats();
    ours.batch_execute(
        "PRAGMA cache_size = 2; BEGIN; \
         WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30) \
         INSERT INTO t (v, body) SELECT 7, randomblob(3000) FROM s;",
    )
    .expect("spilling insert");
    assert!(
        stats().asked - before.asked >= 20,
        "the insert spilled frames into the log"
    );
    assert!(stats().gathered > 0, "the spilled frames are gathered");
    ours.batch_execute("ROLLBACK;").expect("rollback");
    assert_nothing_gathered();
    // Another connection commits frames where the rolled-back ones were.
    insert(&mut theirs, 30, 2);
    // Everything our connection still does with the log.
    assert_eq!(rows(&mut ours), 70);
    assert_eq!(sum(&mut ours), 40 + 60);
    ours.batch_execute("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
    drop(ours);
    let mut again = open(&path, false);
    assert_eq!(rows(&mut again), 70);
    assert_eq!(sum(&mut again), 40 + 60);
    assert_intact(&mut again);
    assert_intact(&mut theirs);
}
