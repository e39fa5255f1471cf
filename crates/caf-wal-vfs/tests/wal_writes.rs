//! The `caf-wal` VFS: a commit's frames reach the file in one write, and the log it leaves is
//! the one SQLite's default VFS reads, after a commit and after a crash.

mod common;

use caf_wal_vfs::stats;
use common::*;
use diesel::connection::SimpleConnection;

#[test]
fn a_commit_of_twenty_pages_is_one_write() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, mut c) = new_database(dir.path());
    let before = stats();
    insert(&mut c, 20, 1);
    let after = stats();
    let asked = after.asked - before.asked;
    let made = after.made - before.made;
    assert!(
        asked >= 40,
        "twenty pages are forty writes of frames: {asked}"
    );
    assert_eq!(made, 1, "the commit's {asked} writes made as one");
    assert_eq!(rows(&mut c), 20);
}

#[test]
fn commits_of_each_vfs_are_read_by_the_other() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, mut ours) = new_database(dir.path());
    let mut theirs = open(&path, false);
    for i in 0..40 {
        let (writer, reader) = if i % 3 == 0 {
            (&mut theirs, &mut ours)
        } else {
            (&mut ours, &mut theirs)
        };
        insert(writer, 2, i);
        assert_eq!(rows(reader), 2 * (i + 1), "after commit {i}");
        if i == 20 {
            // The log starts over: the next commit writes its header at the start again.
            reader
                .batch_execute("PRAGMA wal_checkpoint(TRUNCATE);")
                .expect("checkpoint");
        }
    }
    assert_eq!(sum(&mut theirs), 2 * (0..40).sum::<i64>());
    assert_intact(&mut ours);
    assert_intact(&mut theirs);
}

#[test]
fn a_crash_right_after_commits_loses_none_of_them() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, mut c) = new_database(dir.path());
    for i in 0..10 {
        insert(&mut c, 7, i);
    }
    let image = tempfile::tempdir().expect("tempdir");
    let copy = crash_image(&path, image.path());
    // The connection is not closed (closing writes what is gathered): what it left is what a
    // crash leaves.
    std::mem::forget(c);
    let mut recovered = open(&copy, false);
    assert_eq!(rows(&mut recovered), 70);
    assert_eq!(sum(&mut recovered), 7 * (0..10).sum::<i64>());
    assert_intact(&mut recovered);
}
