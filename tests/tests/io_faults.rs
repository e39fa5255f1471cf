//! An I/O error at every file-system operation of a save and a load (SQLite's "I/O error at
//! every point"): the stores go through caf's test double of the file system
//! ([`caf_core::store::TestFs`]), which fails the *n*-th operation of the test's thread with
//! `EIO`, `ENOSPC` or `EACCES` (once, or that one and every one after it), or writes only half
//! of the *n*-th write. For n = 1, 2, 3, … until a save, a load of it and (hybrid) a flush
//! complete without reaching operation n, each failure is followed by the same checks:
//!
//! - the error surfaces: the step returns it (the very errno injected), unless the failed
//!   operation was one caf is allowed to do without (a spare file it can replace by a new one,
//!   the index log's tail that a load only reads for a faster path); a short write is no error
//!   at all, and must leave a whole file;
//! - nothing acknowledged is lost: every checkpoint saved before loads back equal, from the
//!   store and from a store opened afresh;
//! - no torn file: every checkpoint file in the directory is exactly what caf encoded for its
//!   id, and the index lists exactly the files;
//! - (hybrid) the database agrees with the files (`caf_sql::verify` is clean);
//! - a retry succeeds, and then (hybrid) a flush leaves no record of an unflushed file.
//!
//! Files-only stores, and hybrid stores on SQLite (and PostgreSQL when
//! `CAF_TEST_POSTGRES_URL` is set).

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::encode;
use caf_core::store::{Fault, Fired, OpKind, TestFs};
use caf_core::{Checkpoint, CheckpointStore, FileStore, ListFilter};
use caf_sql::{HybridOptions, HybridStore, SqlStore};
use sql_common::runs::agent_run;
use sql_common::TempSql;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// The store under test, with what the checks need.
trait Subject {
    fn store(&self) -> &dyn CheckpointStore;
    fn dir(&self) -> &Path;
    /// Flushes what the store defers (a hybrid store's files); nothing for a files-only store.
    fn flush(&self) -> caf_core::Result<()>;
    /// Checks that the database agrees with the files, and (after a flush) that no record of
    /// an unflushed file is left.
    fn check_database(&self, flushed: bool, at: &str);
}

struct Files {
    store: FileStore<TestFs>,
}

impl Subject for Files {
    fn store(&self) -> &dyn CheckpointStore {
        &self.store
    }
    fn dir(&self) -> &Path {
        self.store.root()
    }
    fn flush(&self) -> caf_core::Result<()> {
        Ok(())
    }
    fn check_database(&self, _flushed: bool, _at: &str) {}
}

struct Hybrid<'a> {
    store: HybridStore<TestFs>,
    db: &'a TempSql,
}

impl Subject for Hybrid<'_> {
    fn store(&self) -> &dyn CheckpointStore {
        &self.store
    }
    fn dir(&self) -> &Path {
        self.store.files().root()
    }
    fn flush(&self) -> caf_core::Result<()> {
        self.store.flush()
    }
    fn check_database(&self, flushed: bool, at: &str) {
        let report = caf_sql::verify::verify(self.dir(), Some(self.store.sql())).unwrap();
        assert!(report.is_clean(), "{at}: {:#?}", report.problems);
        if flushed {
            let rows = self.db.store().table_counts().unwrap().unflushed_files;
            assert_eq!(
                rows, 0,
                "{at}: a flush after the retry forgets every record"
            );
        }
    }
}

/// Whether the failure of `fired` may be absorbed by caf without an error.
fn may_be_absorbed(fired: &Fired) -> bool {
    let name = fired
        .path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    match fired.op {
        // A spare file that cannot be opened is replaced by a new temporary file.
        OpKind::OpenSpare => name.starts_with(caf_core::store::SPARE_PREFIX),
        // A load reads the index log's new tail only to take the fast path.
        OpKind::Read => name == "index.jsonl",
        // The index is a cache: a record it cannot append (or open its log for) is kept and
        // written with the next append; the save, whose file is in place, succeeds.
        OpKind::Write | OpKind::OpenAppend => name == "index.jsonl",
        _ => false,
    }
}

/// Whether the error, or one of its sources, is the injected I/O error.
fn is_injected(e: &caf_core::Error, fault: Fault) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.raw_os_error() == fault.error().raw_os_error() {
                return true;
            }
        }
        source = s.source();
    }
    false
}

/// The steps of one round: a save of a checkpoint, a load of it, a flush.
const STEPS: usize = 3;

/// Runs the steps of a round from `from` on: the step that failed first and its error, if any.
fn save_load_flush_from(
    s: &dyn Subject,
    c: &Checkpoint,
    from: usize,
) -> Option<(usize, caf_core::Error)> {
    for step in from..STEPS {
        let result = match step {
            0 => s.store().save(c).map(drop),
            1 => s.store().load(&c.id).map(|back| {
                assert_eq!(&back, c, "a load returned another checkpoint");
            }),
            _ => s.flush(),
        };
        if let Err(e) = result {
            return Some((step, e));
        }
    }
    None
}

/// A save of `c`, a load of it, and a flush: the first error, if any.
fn save_load_flush(s: &dyn Subject, c: &Checkpoint) -> Option<(usize, caf_core::Error)> {
    save_load_flush_from(s, c, 0)
}

/// The checks after a failure (see the module docs), `in_flight` being the checkpoint whose
/// save may or may not have happened.
fn check_store(s: &dyn Subject, acknowledged: &[Checkpoint], in_flight: &Checkpoint) {
    let expected = |id: &str| -> Vec<u8> {
        let c = acknowledged
            .iter()
            .chain(std::iter::once(in_flight))
            .find(|c| c.id.as_str() == id)
            .unwrap_or_else(|| panic!("a file for a checkpoint never saved: {id}"));
        encode(c).unwrap()
    };
    let on_disk = caf_tests::json_file_ids(s.dir());
    for id in &on_disk {
        let bytes = std::fs::read(s.dir().join(format!("{id}.json"))).unwrap();
        assert!(bytes == expected(id), "{id}.json is torn");
    }
    let fresh = FileStore::open(s.dir()).unwrap();
    assert!(fresh.problems().is_empty(), "{:?}", fresh.problems());
    for c in acknowledged {
        assert_eq!(&s.store().load(&c.id).unwrap(), c, "{} was lost", c.id);
        assert_eq!(&fresh.load(&c.id).unwrap(), c, "{} was lost on disk", c.id);
    }
    for (who, listed) in [
        ("the store", s.store().list(&ListFilter::default()).unwrap()),
        ("a new store", fresh.list(&ListFilter::default()).unwrap()),
    ] {
        let listed: BTreeSet<String> = listed.into_iter().map(|x| x.id.to_string()).collect();
        assert_eq!(
            listed, on_disk,
            "{who} lists other checkpoints than the files"
        );
    }
}

/// Runs the loop of the module docs for one fault; returns how many failures were checked.
fn every_operation(s: &dyn Subject, fs: &TestFs, fault: Fault, persistent: bool) -> u64 {
    let mut run = agent_run(1, 80).into_iter();
    let mut acknowledged = Vec::new();
    for c in run.by_ref().take(2) {
        assert!(save_load_flush(s, &c).is_none());
        acknowledged.push(c);
    }
    for n in 1.. {
        let c = run.next().expect("enough checkpoints for every operation");
        fs.arm(n, fault, persistent);
        let error = save_load_flush(s, &c);
        let Some(fired) = fs.disarm() else {
            assert!(
                error.is_none(),
                "n = {n}: an error without a fault: {error:?}"
            );
            return n - 1;
        };
        let at = format!("{fault:?} (persistent: {persistent}) at operation {n}, {fired:?}");
        match &error {
            Some((_, e)) => assert!(is_injected(e, fault), "{at}: another error: {e}"),
            None => assert!(
                fault == Fault::ShortWrite || may_be_absorbed(&fired),
                "{at}: the error did not surface"
            ),
        }
        if fault == Fault::ShortWrite {
            assert!(
                error.is_none(),
                "{at}: a short write is no error: {error:?}"
            );
        }
        check_store(s, &acknowledged, &c);
        s.check_database(false, &at);
        // The retry: the step that failed, and those after it.
        let failed_step = error.map_or(STEPS, |(step, _)| step);
        if let Some((_, e)) = save_load_flush_from(s, &c, failed_step) {
            panic!("{at}: the retry failed: {e}");
        }
        acknowledged.push(c);
        check_store(s, &acknowledged, &acknowledged[0]);
        s.check_database(true, &at);
    }
    unreachable!()
}

/// Every fault, once and persistent (a short write is never persistent).
fn plans() -> Vec<(Fault, bool)> {
    let mut out = Vec::new();
    for fault in Fault::ALL {
        out.push((fault, false));
        if fault != Fault::ShortWrite {
            out.push((fault, true));
        }
    }
    out
}

#[test]
fn a_files_only_store_survives_an_io_error_at_every_operation_of_a_save_and_a_load() {
    let mut checked = 0;
    for (fault, persistent) in plans() {
        let tmp = tempfile::tempdir().unwrap();
        let fs = TestFs::new();
        let store = FileStore::open_with_fs(fs.clone(), tmp.path(), Default::default()).unwrap();
        let points = every_operation(&Files { store }, &fs, fault, persistent);
        let least = if fault == Fault::ShortWrite { 2 } else { 8 };
        assert!(points >= least, "{fault:?}: only {points} operations");
        checked += points;
    }
    eprintln!("files-only: {checked} failure points checked");
}

#[test]
fn a_hybrid_store_survives_an_io_error_at_every_operation_of_a_save_a_load_and_a_flush() {
    sql_common::on_each_backend("io_faults_hybrid", |db| {
        let mut checked = 0;
        for (fault, persistent) in plans() {
            let tmp = tempfile::tempdir().unwrap();
            let fs = TestFs::new();
            let files =
                FileStore::open_with_fs(fs.clone(), tmp.path(), Default::default()).unwrap();
            let store = HybridStore::with_options(
                files,
                SqlStore::open(&db.url()).unwrap(),
                HybridOptions {
                    // The test flushes; the background flusher only makes spare files.
                    flush_every: Duration::from_secs(3600),
                },
            )
            .unwrap();
            let subject = Hybrid { store, db };
            let points = every_operation(&subject, &fs, fault, persistent);
            let least = if fault == Fault::ShortWrite { 2 } else { 6 };
            assert!(points >= least, "{fault:?}: only {points} operations");
            checked += points;
            // The next plan saves the same checkpoints into another directory (one database
            // for every plan).
            let execution = &agent_run(1, 1)[0].execution_id;
            subject
                .store
                .sql()
                .delete_execution_checkpoints(execution)
                .unwrap();
        }
        eprintln!(
            "hybrid ({}): {checked} failure points checked",
            db.backend().name()
        );
    });
}
