//! Two stores on one database (two processes) writing the same line, on SQLite and (with
//! `CAF_TEST_POSTGRES_URL`) PostgreSQL. A store remembers the tip of each line it wrote and
//! appends a child there without reading anything first; these tests move the tip from the
//! other store in every way (append, delete, replace, the same child saved first) and check
//! that the remembered tip is used only while it is still the tip: everything loads back equal.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::Checkpoint;
use caf_sql::{SqlStore, SyncOutcome};
use caf_tests::gen::ckpt_id;
use serde_json::json;
use sql_common::runs::agent_run;
use sql_common::{on_each_backend, TempSql};

fn assert_loads_equal(store: &SqlStore, checkpoints: &[&Checkpoint]) {
    for c in checkpoints {
        let back = store
            .load_checkpoint(&c.id)
            .unwrap_or_else(|e| panic!("loading {}: {e}", c.id));
        assert_eq!(&back, *c, "{} changed in the database", c.id);
    }
}

/// `c` under another id, with something of its own: a sibling of `c` (same parent).
fn sibling(c: &Checkpoint, id: &str) -> Checkpoint {
    let mut s = c.clone();
    s.id = ckpt_id(id);
    s.snapshot
        .context
        .variables
        .insert("branch".into(), json!(id));
    s.snapshot.thought_chain.thoughts.pop();
    s
}

/// A child of `c` with the same items and one more variable (so that it writes no revision
/// where a sibling saved elsewhere may have one).
fn child(c: &Checkpoint, id: &str) -> Checkpoint {
    let mut s = c.clone();
    s.id = ckpt_id(id);
    s.parent_id = Some(c.id.clone());
    s.snapshot
        .context
        .variables
        .insert("branch".into(), json!(id));
    s
}

/// The first store saves `run[..n]`; a second store is opened on the same database.
fn two_stores(db: &TempSql, run: &[Checkpoint], n: usize) -> SqlStore {
    for c in &run[..n] {
        assert_eq!(db.save_checkpoint(c).unwrap().1, SyncOutcome::Added);
    }
    SqlStore::open(&db.url()).unwrap()
}

#[test]
fn a_line_the_other_store_moved_on_is_forked_not_continued() {
    on_each_backend("a_line_the_other_store_moved_on", |db| {
        let run = agent_run(1, 6);
        let other = two_stores(db, &run, 3);
        // The other store continues the line (reading its tip back)…
        other.save_checkpoint(&run[3]).unwrap();
        // …so this store's remembered tip (run[2]) is no longer the tip: a child of it forks.
        let fork = sibling(&run[3], "ckpt_fork_3");
        assert_eq!(db.save_checkpoint(&fork).unwrap().1, SyncOutcome::Added);
        let lines = db.table_counts().unwrap().lines;
        assert_eq!(lines, 2, "the fork starts a line of its own");
        // Both go on: this store continues its fork, the other store its line.
        let mut fork_child = run[4].clone();
        fork_child.id = ckpt_id("ckpt_fork_4");
        fork_child.parent_id = Some(fork.id.clone());
        db.save_checkpoint(&fork_child).unwrap();
        other.save_checkpoint(&run[4]).unwrap();
        db.save_checkpoint(&run[5]).unwrap();
        assert_eq!(db.table_counts().unwrap().lines, 2);
        let all: Vec<&Checkpoint> = run.iter().chain([&fork, &fork_child]).collect();
        assert_loads_equal(db, &all);
        assert_loads_equal(&other, &all);
    });
}

#[test]
fn a_line_the_other_store_moved_on_and_back_is_not_continued() {
    on_each_backend("a_line_the_other_store_moved_on_and_back", |db| {
        let run = agent_run(1, 6);
        let other = two_stores(db, &run, 3);
        // The other store appends a child and deletes it: run[2] is the newest checkpoint of
        // its line again, but the line is sealed (the child closed revisions of run[2]).
        other.save_checkpoint(&run[3]).unwrap();
        assert!(other.delete_checkpoint(&run[3].id).unwrap());
        let fork = sibling(&run[3], "ckpt_fork_3");
        db.save_checkpoint(&fork).unwrap();
        assert_eq!(db.table_counts().unwrap().lines, 2, "a new line");
        let all: Vec<&Checkpoint> = [&run[0], &run[1], &run[2], &fork].into();
        assert_loads_equal(db, &all);
        assert_loads_equal(&other, &all);
    });
}

#[test]
fn a_line_with_a_gap_after_the_remembered_tip_is_not_continued() {
    on_each_backend("a_line_with_a_gap", |db| {
        let run = agent_run(1, 6);
        let other = two_stores(db, &run, 3);
        // The other store appends two children and deletes the first: the line is not sealed
        // (its tip is still there), and the seq after run[2] is free.
        other.save_checkpoint(&run[3]).unwrap();
        other.save_checkpoint(&run[4]).unwrap();
        assert!(other.delete_checkpoint(&run[3].id).unwrap());
        let fork = child(&run[2], "ckpt_fork_3");
        db.save_checkpoint(&fork).unwrap();
        assert_eq!(db.table_counts().unwrap().lines, 2, "a new line");
        let all: Vec<&Checkpoint> = [&run[0], &run[1], &run[2], &run[4], &fork].into();
        assert_loads_equal(db, &all);
        assert_loads_equal(&other, &all);
    });
}

#[test]
fn a_tip_the_other_store_deleted_is_not_continued() {
    on_each_backend("a_tip_the_other_store_deleted", |db| {
        let run = agent_run(1, 5);
        let other = two_stores(db, &run, 3);
        assert!(other.delete_checkpoint(&run[2].id).unwrap());
        // The child of a deleted checkpoint starts a new line (the old one is sealed).
        assert_eq!(db.save_checkpoint(&run[3]).unwrap().1, SyncOutcome::Added);
        db.save_checkpoint(&run[4]).unwrap();
        assert_eq!(db.table_counts().unwrap().lines, 2);
        let kept: Vec<&Checkpoint> = [&run[0], &run[1], &run[3], &run[4]].into();
        assert_loads_equal(db, &kept);
        assert_loads_equal(&other, &kept);
        assert!(db.load_checkpoint(&run[2].id).is_err());
    });
}

#[test]
fn a_tip_the_other_store_replaced_is_not_continued() {
    on_each_backend("a_tip_the_other_store_replaced", |db| {
        let run = agent_run(1, 5);
        let other = two_stores(db, &run, 3);
        let mut edited = run[2].clone();
        std::sync::Arc::make_mut(&mut edited.snapshot.thought_chain.thoughts[0]).content =
            "edited elsewhere".into();
        assert_eq!(
            other.save_checkpoint(&edited).unwrap().1,
            SyncOutcome::Replaced
        );
        // The remembered snapshot of run[2] is stale: the child is written against the
        // replacement, read back from the database.
        db.save_checkpoint(&run[3]).unwrap();
        db.save_checkpoint(&run[4]).unwrap();
        let all: Vec<&Checkpoint> = [&run[0], &run[1], &edited, &run[3], &run[4]].into();
        assert_loads_equal(db, &all);
        assert_loads_equal(&other, &all);
    });
}

#[test]
fn a_child_the_other_store_saved_first_is_unchanged_or_replaced() {
    on_each_backend("a_child_the_other_store_saved_first", |db| {
        let run = agent_run(1, 5);
        let other = two_stores(db, &run, 3);
        other.save_checkpoint(&run[3]).unwrap();
        let counts = db.table_counts().unwrap();
        assert_eq!(
            db.save_checkpoint(&run[3]).unwrap().1,
            SyncOutcome::Unchanged
        );
        assert_eq!(db.table_counts().unwrap(), counts, "nothing written");
        let mut edited = run[3].clone();
        edited
            .snapshot
            .context
            .variables
            .insert("x".into(), json!(1));
        assert_eq!(
            db.save_checkpoint(&edited).unwrap().1,
            SyncOutcome::Replaced
        );
        db.save_checkpoint(&run[4]).unwrap();
        let all: Vec<&Checkpoint> = [&run[0], &run[1], &run[2], &edited, &run[4]].into();
        assert_loads_equal(db, &all);
        assert_loads_equal(&other, &all);
        assert_eq!(db.table_counts().unwrap().checkpoints, 5);
    });
}

#[test]
fn a_store_continues_its_line_after_another_store_wrote_elsewhere() {
    on_each_backend("a_store_continues_its_line", |db| {
        let run = agent_run(2, 4);
        let (a, b) = run.split_at(4);
        let other = two_stores(db, a, 2);
        for c in b {
            other.save_checkpoint(c).unwrap();
        }
        // Another execution's saves do not move this store's line: it continues it.
        for c in &a[2..] {
            db.save_checkpoint(c).unwrap();
        }
        assert_eq!(db.table_counts().unwrap().lines, 2);
        let all: Vec<&Checkpoint> = run.iter().collect();
        assert_loads_equal(db, &all);
        assert_loads_equal(&other, &all);
    });
}
