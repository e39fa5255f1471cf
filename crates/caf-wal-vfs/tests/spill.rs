//! A transaction larger than its page cache: SQLite writes frames before the commit, rewrites
//! some in place and their checksums at the commit, all straight to the file. In a process of
//! its own, so that nothing else shapes SQLite's page cache.

mod common;

use caf_wal_vfs::stats;
use common::*;
use diesel::connection::SimpleConnection;

#[test]
fn a_transaction_that_spills_and_rewrites_its_frames_survives_a_crash() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, mut c) = new_database(dir.path());
    insert(&mut c, 50, 0);
    let before = stats();
    c.batch_execute(
        "PRAGMA cache_size = 2; BEGIN; UPDATE t SET v = v + 1; UPDATE t SET v = v + 2; \
         UPDATE t SET v = v + 4; COMMIT;",
    )
    .expect("spilling transaction");
    let straight = stats().straight - before.straight;
    assert!(straight >= 50, "frames rewritten in place: {straight}");
    assert_nothing_gathered();
    let image = tempfile::tempdir().expect("tempdir");
    let copy = crash_image(&path, image.path());
    // Not closed (closing writes what is gathered): what it left is what a crash leaves.
    std::mem::forget(c);
    let mut recovered = open(&copy, false);
    assert_eq!(rows(&mut recovered), 50);
    assert_eq!(sum(&mut recovered), 50 * 7);
    assert_intact(&mut recovered);
}
