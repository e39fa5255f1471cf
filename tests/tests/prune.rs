//! Pruning in the database: rows that no kept checkpoint references go, what is kept loads as
//! the files hold it, and a save that races a prune is never deleted. On SQLite and hybrid
//! always, PostgreSQL with `CAF_TEST_POSTGRES_URL`.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::prune::prune;
use caf_core::retention::RetentionPolicy;
use caf_core::{CheckpointStore, ListFilter, Timestamp};
use sql_common::runs::agent_run;

fn keep_last(n: usize) -> RetentionPolicy {
    RetentionPolicy::default().with_overrides(Some(n), None, None)
}

/// After the workload's last checkpoint (2030-01-01).
fn later() -> Timestamp {
    Timestamp::from_micros(1_893_456_000_000_000)
}

#[test]
fn pruning_half_drops_the_rows_and_loads_still_equal_the_files() {
    sql_common::on_each_backend("pruning_half_drops_the_rows", |db| {
        let checkpoints = agent_run(3, 20);
        for c in &checkpoints {
            db.store().save(c).unwrap();
        }
        let before = db.store().table_counts().unwrap();
        let outcome = prune(db.store(), &keep_last(10), None, later(), false).unwrap();
        assert_eq!(outcome.deleted.len(), 30, "half of 3 x 20");
        let after = db.store().table_counts().unwrap();
        assert_eq!(after.checkpoints, before.checkpoints - 30);
        // Revisions only pruned checkpoints could see go (a variable's older values); what the
        // kept checkpoints hold stays (each holds every thought so far).
        assert!(after.entries < before.entries, "{before:?} -> {after:?}");
        assert_eq!(after.thoughts, before.thoughts);
        for c in &checkpoints {
            match db.store().load(&c.id) {
                Ok(loaded) => assert_eq!(&loaded, c),
                Err(caf_core::Error::NotFound { .. }) => {
                    assert!(outcome.deleted.contains(&c.id))
                }
                Err(e) => panic!("{e}"),
            }
        }
        // Twice is once.
        let again = prune(db.store(), &keep_last(10), None, later(), false).unwrap();
        assert!(again.deleted.is_empty());
    });
}

#[test]
fn in_a_hybrid_store_files_and_database_stay_equal() {
    let h = sql_common::TempHybrid::new();
    let checkpoints = agent_run(2, 12);
    for c in &checkpoints {
        h.save(c).unwrap();
    }
    let outcome = prune(&*h, &keep_last(4), None, later(), false).unwrap();
    assert_eq!(outcome.deleted.len(), 16, "{:?}", outcome.plan);
    let files = h.files().list(&ListFilter::default()).unwrap();
    assert_eq!(
        files,
        h.sql().list_checkpoints(&ListFilter::default()).unwrap()
    );
    for s in &files {
        assert_eq!(
            h.sql().load_checkpoint(&s.id).unwrap(),
            h.files().load(&s.id).unwrap()
        );
    }
    // The tombstones are in the directory, where `caf log` reads them.
    let log = caf_core::prune::PrunedLog::of_dir(h.files().root());
    assert_eq!(log.load().unwrap().len(), 16, "{}", log.path().display());
    assert_eq!(h.pruned().unwrap().len(), 16);
}

#[test]
fn a_database_alone_keeps_the_tombstones_that_bridge_lineage() {
    sql_common::on_each_backend("a_database_alone_keeps_the_tombstones", |db| {
        let checkpoints = agent_run(1, 10);
        for c in &checkpoints {
            db.store().save(c).unwrap();
        }
        let outcome = prune(db.store(), &keep_last(3), None, later(), false).unwrap();
        assert_eq!(outcome.deleted.len(), 7);
        let stones = db.store().pruned().unwrap();
        assert_eq!(stones.len(), 7);
        // The oldest kept checkpoint's parent was pruned: the tombstones lead back to the
        // start of the line, 7 pruned.
        let oldest_kept = &checkpoints[7];
        let gap =
            caf_core::prune::ancestry(db.store(), &stones, oldest_kept.parent_id.as_ref().unwrap())
                .unwrap()
                .unwrap();
        assert_eq!(gap.pruned, 7);
        assert_eq!(gap.nearest_kept, None);
    });
}

/// A store that saves `racer` (once) when the prune starts deleting: a save that lands between
/// the prune's listing and its deletes.
struct Racing<'a> {
    inner: &'a dyn CheckpointStore,
    racer: std::sync::Mutex<Option<caf_core::Checkpoint>>,
}

impl CheckpointStore for Racing<'_> {
    fn save(&self, c: &caf_core::Checkpoint) -> caf_core::Result<caf_core::CheckpointSummary> {
        self.inner.save(c)
    }
    fn load(&self, id: &caf_core::CheckpointId) -> caf_core::Result<caf_core::Checkpoint> {
        self.inner.load(id)
    }
    fn list(&self, f: &ListFilter) -> caf_core::Result<Vec<caf_core::CheckpointSummary>> {
        self.inner.list(f)
    }
    fn delete(&self, id: &caf_core::CheckpointId) -> caf_core::Result<bool> {
        if let Some(c) = self.racer.lock().unwrap().take() {
            self.inner.save(&c)?;
        }
        self.inner.delete(id)
    }
    fn delete_execution(&self, e: &caf_core::ExecutionId) -> caf_core::Result<usize> {
        self.inner.delete_execution(e)
    }
}

#[test]
fn a_save_racing_a_prune_is_never_deleted() {
    let h = sql_common::TempHybrid::new();
    let checkpoints = agent_run(1, 12);
    let (first, rest) = checkpoints.split_at(10);
    for c in first {
        h.save(c).unwrap();
    }
    // The racer is old enough for max-age to condemn it, and not the execution's newest.
    let mut racer = rest[0].clone();
    racer.timestamp = first[0].timestamp;
    h.save(&rest[1]).unwrap();
    let racing = Racing {
        inner: &*h,
        racer: std::sync::Mutex::new(Some(racer.clone())),
    };
    let policy = RetentionPolicy::default().with_overrides(
        None,
        Some(caf_core::duration::Duration::from_secs(1)),
        None,
    );
    let outcome = prune(&racing, &policy, None, later(), false).unwrap();
    assert!(!outcome.deleted.is_empty());
    assert!(!outcome.deleted.contains(&racer.id));
    assert_eq!(
        h.load(&racer.id).unwrap(),
        racer,
        "the racing save survived"
    );
    // The next prune sees it, and may delete it: that is pruning, not a race.
    let next = prune(&*h, &policy, None, later(), false).unwrap();
    assert!(next.deleted.contains(&racer.id));
}
