//! Recovery from damaged checkpoints, in the library:
//!
//! - `restore_latest` falls back along the lineage of the execution's newest checkpoint (not to
//!   the newest valid file), whether the damage is seen by an open store, found when a store
//!   opens (placed by the index's memory of the file, or by what the damaged file still says),
//!   and says what it skipped and why;
//! - a hybrid store loads the database's intact copy of a damaged file, and says so;
//! - `verify` finds each kind of problem, and `repair` fixes them without deleting a file —
//!   writing a damaged file back from the database byte for byte when it can;
//! - files and database are compared cheaply (what `caf stats` warns about).
//!
//! SQLite always; PostgreSQL too when `CAF_TEST_POSTGRES_URL` is set.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::format::LoadError;
use caf_core::{
    CheckpointManager, CheckpointStore, Chosen, Error, FileStore, ListFilter, LoadSource,
};
use caf_sql::verify::{repair, verify, Area, FindingKind, Remedy, Repair, RepairOptions};
use caf_sql::{HybridStore, SqlStore};
use caf_tests::gen::{checkpoint, ckpt_id, exec_id};
use caf_tests::recovery::{corrupt, forked_execution, truncate_after_parent};
use sql_common::{on_each_backend, TempSql};
use std::path::{Path, PathBuf};

const EXEC: &str = "exec_fork";

fn file(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

fn skipped_ids(r: &caf_core::Restored) -> Vec<String> {
    r.skipped.iter().map(|(id, _)| id.to_string()).collect()
}

/// A directory holding the forked execution, saved by a file store.
fn forked_files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path()).unwrap();
    for c in forked_execution(EXEC) {
        store.save(&c).unwrap();
    }
    dir
}

fn restore_latest(dir: &Path) -> caf_core::Result<caf_core::Restored> {
    CheckpointManager::new(FileStore::open(dir).unwrap()).restore_latest(&exec_id(EXEC))
}

#[test]
fn restore_falls_back_to_the_newest_valid_ancestor_not_the_newest_valid_file() {
    let dir = forked_files();
    let store = FileStore::open(dir.path()).unwrap();
    // Damaged under an open store: it is still listed, and fails to load.
    corrupt(&file(dir.path(), "ckpt_e"), false);
    let r = CheckpointManager::new(store)
        .restore_latest(&exec_id(EXEC))
        .unwrap();
    assert_eq!(r.checkpoint.id.as_str(), "ckpt_c", "not the fork ckpt_d");
    assert_eq!(
        r.chosen,
        Chosen::Ancestor {
            head: ckpt_id("ckpt_e"),
            generations: 1
        }
    );
    assert_eq!(skipped_ids(&r), ["ckpt_e"]);
    assert!(
        r.skipped[0].1.contains("checksum mismatch"),
        "{:?}",
        r.skipped
    );
    assert!(r.source.is_primary());
    assert_eq!(r.state.last_checkpoint(), Some(&ckpt_id("ckpt_c")));

    // A store opened now does not list the damaged file: the index remembers it (and keeps
    // remembering it on the next opens).
    for attempt in 0..2 {
        let store = FileStore::open(dir.path()).unwrap();
        assert_eq!(store.problems().len(), 1);
        let damaged = store.damaged().unwrap();
        assert_eq!(damaged.len(), 1);
        assert_eq!(damaged[0].id.as_str(), "ckpt_e");
        assert_eq!(damaged[0].parent_id, Some(ckpt_id("ckpt_c")));
        let r = CheckpointManager::new(store)
            .restore_latest(&exec_id(EXEC))
            .unwrap();
        assert_eq!(r.checkpoint.id.as_str(), "ckpt_c", "open #{attempt}");
        assert_eq!(skipped_ids(&r), ["ckpt_e"]);
    }

    // Without any index, what the damaged file still says places it.
    std::fs::remove_dir_all(dir.path().join(".caf")).unwrap();
    let r = restore_latest(dir.path()).unwrap();
    assert_eq!(r.checkpoint.id.as_str(), "ckpt_c");
    assert!(matches!(r.chosen, Chosen::Ancestor { .. }));
}

#[test]
fn a_truncated_newest_file_is_placed_by_the_index() {
    let dir = forked_files();
    truncate_after_parent(&file(dir.path(), "ckpt_e"));
    let r = restore_latest(dir.path()).unwrap();
    assert_eq!(r.checkpoint.id.as_str(), "ckpt_c");
    assert_eq!(skipped_ids(&r), ["ckpt_e"]);
    assert!(r.skipped[0].1.contains("not valid JSON"), "{:?}", r.skipped);
}

#[test]
fn bit_rot_that_keeps_size_and_mtime_is_walked_past_too() {
    let dir = forked_files();
    corrupt(&file(dir.path(), "ckpt_e"), true);
    corrupt(&file(dir.path(), "ckpt_c"), true);
    // The index trusts both files (same size, same mtime): they are listed, and fail to load.
    let store = FileStore::open(dir.path()).unwrap();
    assert!(store.problems().is_empty());
    let r = CheckpointManager::new(store)
        .restore_latest(&exec_id(EXEC))
        .unwrap();
    assert_eq!(r.checkpoint.id.as_str(), "ckpt_b");
    assert_eq!(
        r.chosen,
        Chosen::Ancestor {
            head: ckpt_id("ckpt_e"),
            generations: 2
        }
    );
    assert_eq!(skipped_ids(&r), ["ckpt_e", "ckpt_c"]);
}

#[test]
fn when_no_ancestor_loads_restore_takes_the_newest_valid_checkpoint_and_says_so() {
    let dir = forked_files();
    for id in ["ckpt_e", "ckpt_c", "ckpt_b", "ckpt_a"] {
        corrupt(&file(dir.path(), id), false);
    }
    let r = restore_latest(dir.path()).unwrap();
    assert_eq!(r.checkpoint.id.as_str(), "ckpt_d");
    assert_eq!(
        r.chosen,
        Chosen::NewestValid {
            head: ckpt_id("ckpt_e")
        }
    );
    assert_eq!(skipped_ids(&r), ["ckpt_e", "ckpt_c", "ckpt_b", "ckpt_a"]);

    corrupt(&file(dir.path(), "ckpt_d"), false);
    match restore_latest(dir.path()) {
        Err(Error::Load {
            error: LoadError::Corrupted { .. },
            ..
        }) => {}
        other => panic!("expected the last load error, got {other:?}"),
    }
}

#[test]
fn the_walk_stays_inside_the_execution() {
    let dir = forked_files();
    let store = FileStore::open(dir.path()).unwrap();
    // A new execution forked from ckpt_c: x, then y.
    let mut x = checkpoint("ckpt_x", "exec_branch", 10);
    x.parent_id = Some(ckpt_id("ckpt_c"));
    let mut y = checkpoint("ckpt_y", "exec_branch", 11);
    y.parent_id = Some(ckpt_id("ckpt_x"));
    store.save(&x).unwrap();
    store.save(&y).unwrap();
    corrupt(&file(dir.path(), "ckpt_y"), false);
    let m = CheckpointManager::new(FileStore::open(dir.path()).unwrap());
    let r = m.restore_latest(&exec_id("exec_branch")).unwrap();
    assert_eq!(r.checkpoint.id.as_str(), "ckpt_x");
    corrupt(&file(dir.path(), "ckpt_x"), false);
    let m = CheckpointManager::new(FileStore::open(dir.path()).unwrap());
    // ckpt_c loads, but it is another execution's state.
    assert!(m.restore_latest(&exec_id("exec_branch")).is_err());
}

/// A hybrid store on the database of `db`, over the directory `dir`.
fn hybrid(dir: &Path, db: &TempSql) -> HybridStore {
    HybridStore::new(
        FileStore::open(dir).unwrap(),
        SqlStore::open(&db.url()).unwrap(),
    )
    .unwrap()
}

#[test]
fn hybrid_load_of_a_damaged_file_uses_the_database_copy_and_says_so() {
    on_each_backend("hybrid_load_of_a_damaged_file", |db| {
        let dir = tempfile::tempdir().unwrap();
        let run = forked_execution(EXEC);
        {
            let h = hybrid(dir.path(), db);
            for c in &run {
                h.save(c).unwrap();
            }
        }
        let e = &run[4];
        corrupt(&file(dir.path(), "ckpt_e"), false);
        let h = hybrid(dir.path(), db);
        assert!(h.files().load(&e.id).is_err());
        match h.load_with_source(&e.id).unwrap() {
            (c, LoadSource::Database { file_error, .. }) => {
                assert_eq!(&c, e);
                assert!(
                    matches!(
                        file_error,
                        Error::Load {
                            error: LoadError::Corrupted { .. },
                            ..
                        }
                    ),
                    "{file_error:?}"
                );
            }
            (_, other) => panic!("expected the database copy, got {other:?}"),
        }
        assert_eq!(&h.load(&e.id).unwrap(), e);
        let m = CheckpointManager::new(h);
        let r = m.restore(&e.id).unwrap();
        assert!(matches!(r.source, LoadSource::Database { .. }));
        // restore_latest: the damaged newest is not listed, yet it is the one restored.
        let r = m.restore_latest(&exec_id(EXEC)).unwrap();
        assert_eq!(r.checkpoint, *e);
        assert_eq!(r.chosen, Chosen::Requested);
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        assert!(matches!(r.source, LoadSource::Database { .. }));
        // A clean file loads from itself.
        assert!(m.restore(&run[2].id).unwrap().source.is_primary());

        // The database holds another version of ckpt_b: the damaged file is not replaced by it.
        let mut other = run[1].clone();
        other.metadata.labels = vec!["elsewhere".into()];
        m.store().sql().save(&other).unwrap();
        corrupt(&file(dir.path(), "ckpt_b"), false);
        assert!(matches!(
            m.store().load(&run[1].id),
            Err(Error::Load { .. })
        ));
        // A missing file is not brought back: the files decide what exists.
        std::fs::remove_file(file(dir.path(), "ckpt_a")).unwrap();
        assert!(matches!(
            m.store().load(&run[0].id),
            Err(Error::NotFound { .. })
        ));
    });
}

/// A store of files and a database, in sync, holding the forked execution and two more.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(db: &TempSql) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let h = hybrid(dir.path(), db);
        for c in forked_execution(EXEC) {
            h.save(&c).unwrap();
        }
        h.save(&checkpoint("ckpt_f", "exec_other", 6)).unwrap();
        h.save(&checkpoint("ckpt_g", "exec_other", 8)).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn file(&self, id: &str) -> PathBuf {
        file(self.path(), id)
    }

    /// Appends a raw line to the index log.
    fn append_to_index(&self, line: &str) {
        use std::io::Write;
        let mut f = std::fs::File::options()
            .append(true)
            .open(self.path().join(".caf/index.jsonl"))
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }

    /// The index log's `put` line of `id`, as JSON.
    /// Appends `id`'s index entry again, with a digest that is not its file's.
    fn append_wrong_digest(&self, id: &str) {
        let mut entry = self.index_line(id);
        assert!(entry["digest"].as_str().unwrap().starts_with("blake3:"));
        entry["digest"] = format!("blake3:{}", "0".repeat(64)).into();
        self.append_to_index(&entry.to_string());
    }

    fn index_line(&self, id: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.path().join(".caf/index.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .rfind(|v| v["op"] == "put" && v["summary"]["id"] == id)
            .unwrap_or_else(|| panic!("no index line for {id}"))
    }
}

#[test]
fn verify_finds_each_kind_of_problem() {
    on_each_backend("verify_finds_each_kind_of_problem", |db| {
        let fx = Fixture::new(db);
        let sql = SqlStore::open(&db.url()).unwrap();
        let clean = verify(fx.path(), Some(&sql)).unwrap();
        assert!(clean.is_clean(), "{:?}", clean.problems);
        assert_eq!(
            (clean.files, clean.index_entries, clean.rows),
            (7, Some(7), Some(7))
        );

        // Files: a bad checksum, a file named for another checkpoint, bit rot (a bad checksum
        // in a file whose size and time the index still trusts).
        corrupt(&fx.file("ckpt_e"), false);
        corrupt(&fx.file("ckpt_g"), true);
        std::fs::copy(fx.file("ckpt_a"), fx.file("ckpt_b")).unwrap();
        // Index: an entry that differs from its file (and that an open would trust); an entry
        // for no file and a file it does not list are not problems (any open fixes them).
        let mut ghost = fx.index_line("ckpt_a");
        ghost["summary"]["id"] = "ckpt_ghost".into();
        fx.append_to_index(&ghost.to_string());
        let mut wrong = fx.index_line("ckpt_c");
        wrong["summary"]["step_number"] = 99.into();
        fx.append_to_index(&wrong.to_string());
        fx.append_wrong_digest("ckpt_f");
        fx.append_to_index(r#"{"op":"del","id":"ckpt_d"}"#);
        // Database: a row missing, a row with no file, a row of another version, a damaged row.
        sql.delete_checkpoint(&ckpt_id("ckpt_a")).unwrap();
        sql.save(&checkpoint("ckpt_extra", "exec_other", 7))
            .unwrap();
        let mut other = checkpoint("ckpt_f", "exec_other", 6);
        other.metadata.labels = vec!["elsewhere".into()];
        sql.save(&other).unwrap();
        db.execute_raw(
            "UPDATE checkpoints SET rest = 'not json' WHERE id = 'ckpt_d'",
            "UPDATE checkpoints SET rest = 'not json' WHERE id = 'ckpt_d'",
        );

        let before = caf_tests::cli::files(fx.path());
        let r = verify(fx.path(), Some(&sql)).unwrap();
        assert_eq!(
            caf_tests::cli::files(fx.path()),
            before,
            "verify changed a file"
        );
        let found: Vec<(FindingKind, &str)> =
            r.problems.iter().map(|f| (f.kind, f.id.as_str())).collect();
        let expected = [
            (FindingKind::WrongName, "ckpt_b"),
            (FindingKind::Corrupted, "ckpt_e"),
            (FindingKind::Corrupted, "ckpt_g"),
            (FindingKind::IndexDiffers, "ckpt_c"),
            (FindingKind::IndexDiffers, "ckpt_f"),
            (FindingKind::StaleIndexEntry, "ckpt_g"),
            (FindingKind::MissingRow, "ckpt_a"),
            (FindingKind::RowDamaged, "ckpt_d"),
            (FindingKind::ExtraRow, "ckpt_extra"),
            (FindingKind::RowDiffers, "ckpt_f"),
        ];
        assert_eq!(found, expected, "{:#?}", r.problems);
        for f in &r.problems {
            assert_eq!(f.area, f.kind.area());
            assert_eq!(f.path.is_some(), f.area == Area::File, "{f:?}");
            assert!(!f.message.is_empty() && !f.message.contains('\n'), "{f:?}");
        }
        // The corrupted file's database copy is intact: repair would write it back. ckpt_b's
        // database copy is intact too (the file holds ckpt_a whole).
        let remedy = |id: &str| {
            r.problems
                .iter()
                .find(|f| f.id.as_str() == id)
                .unwrap()
                .remedy
        };
        assert_eq!(remedy("ckpt_e"), Remedy::RestoreFromDatabase);
        assert_eq!(remedy("ckpt_b"), Remedy::RestoreFromDatabase);
        assert_eq!(remedy("ckpt_extra"), Remedy::RemoveRow);

        // Without a database, only the files and the index are checked.
        let files_only = verify(fx.path(), None).unwrap();
        assert!(files_only.problems.iter().all(|f| f.area != Area::Database));
        assert_eq!(files_only.rows, None);
        let e = files_only
            .problems
            .iter()
            .find(|f| f.id.as_str() == "ckpt_e")
            .unwrap();
        assert_eq!(e.remedy, Remedy::Quarantine);
    });
}

#[test]
fn a_directory_without_an_index_is_not_a_problem() {
    let dir = forked_files();
    std::fs::remove_dir_all(dir.path().join(".caf")).unwrap();
    let r = verify(dir.path(), None).unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
    assert_eq!(r.index_entries, None);
    assert!(!dir.path().join(".caf").exists(), "verify wrote an index");
}

#[test]
fn repair_quarantines_without_deleting_and_rebuilds_index_and_database() {
    on_each_backend("repair_quarantines", |db| {
        let fx = Fixture::new(db);
        let sql = SqlStore::open(&db.url()).unwrap();
        // ckpt_e: damaged, and the database holds another version: it cannot be written back.
        let mut other = forked_execution(EXEC).remove(4);
        other.metadata.labels = vec!["elsewhere".into()];
        sql.save(&other).unwrap();
        corrupt(&fx.file("ckpt_e"), false);
        let damaged = std::fs::read(fx.file("ckpt_e")).unwrap();
        // A stale index entry, a missing row, a row with no file.
        let mut wrong = fx.index_line("ckpt_c");
        wrong["summary"]["step_number"] = 99.into();
        fx.append_to_index(&wrong.to_string());
        fx.append_wrong_digest("ckpt_f");
        sql.delete_checkpoint(&ckpt_id("ckpt_a")).unwrap();
        sql.save(&checkpoint("ckpt_extra", "exec_other", 7))
            .unwrap();

        let r = repair(fx.path(), Some(&sql), RepairOptions::default()).unwrap();
        assert!(!r.found.is_clean());
        // The damaged file is in the quarantine, byte for byte, with a note; not in the store.
        let q = fx.path().join(".caf/quarantine");
        assert!(!fx.file("ckpt_e").exists());
        assert_eq!(std::fs::read(q.join("ckpt_e.json")).unwrap(), damaged);
        let note = std::fs::read_to_string(q.join("ckpt_e.json.why.txt")).unwrap();
        assert!(note.contains("checksum mismatch"), "{note}");
        assert!(
            note.contains(&fx.file("ckpt_e").display().to_string()),
            "{note}"
        );
        // The database's other version was saved to the quarantine before its row went.
        let saved = std::fs::read(q.join("ckpt_e.database.json")).unwrap();
        let saved = caf_core::format::decode(&saved, &Default::default()).unwrap();
        assert_eq!(saved.checkpoint, other);
        assert!(r
            .repairs
            .iter()
            .any(|a| matches!(a, Repair::Quarantined { id, .. } if id.as_str() == "ckpt_e")));
        assert!(r
            .repairs
            .iter()
            .any(|a| matches!(a, Repair::RebuiltIndex { .. })));
        assert!(r
            .repairs
            .iter()
            .any(|a| matches!(a, Repair::SyncedDatabase { added: 1, .. })));
        // Only the row with no file is left (a shared database holds such rows).
        let left: Vec<(FindingKind, &str)> = r
            .after
            .problems
            .iter()
            .map(|f| (f.kind, f.id.as_str()))
            .collect();
        assert_eq!(left, [(FindingKind::ExtraRow, "ckpt_extra")]);
        // The rebuilt index records the digest of the file's bytes again.
        let bytes = std::fs::read(fx.file("ckpt_f")).unwrap();
        assert_eq!(
            fx.index_line("ckpt_f")["digest"],
            caf_core::format::file_digest(&bytes).as_str()
        );
        assert_eq!(
            sql.load_checkpoint(&ckpt_id("ckpt_a")).unwrap(),
            forked_execution(EXEC)[0]
        );
        assert!(sql.load_checkpoint(&ckpt_id("ckpt_e")).is_err());

        // Asked to, it removes that row too, keeping a copy.
        let options = RepairOptions {
            remove_extra_rows: true,
        };
        let r = repair(fx.path(), Some(&sql), options).unwrap();
        assert!(r.after.is_clean(), "{:?}", r.after.problems);
        assert!(q.join("ckpt_extra.database.json").is_file());
        assert!(sql.load_checkpoint(&ckpt_id("ckpt_extra")).is_err());
        // Quarantined twice: the second copy gets a name of its own.
        corrupt(&fx.file("ckpt_d"), false);
        std::fs::copy(fx.file("ckpt_d"), q.join("ckpt_d.json")).unwrap();
        let r = repair(fx.path(), None, RepairOptions::default()).unwrap();
        assert!(r.after.is_clean(), "{:?}", r.after.problems);
        assert!(q.join("ckpt_d.2.json").is_file() && q.join("ckpt_d.2.json.why.txt").is_file());
        // The repaired store opens clean, and restore walks past the quarantined newest.
        let r = restore_latest(fx.path()).unwrap();
        assert_eq!(r.checkpoint.id.as_str(), "ckpt_c");
    });
}

#[test]
fn repair_writes_a_damaged_file_back_from_the_database_byte_for_byte() {
    on_each_backend("repair_restores", |db| {
        let fx = Fixture::new(db);
        let sql = SqlStore::open(&db.url()).unwrap();
        let originals: Vec<Vec<u8>> = ["ckpt_c", "ckpt_d", "ckpt_e"]
            .iter()
            .map(|id| std::fs::read(fx.file(id)).unwrap())
            .collect();
        corrupt(&fx.file("ckpt_e"), false);
        truncate_after_parent(&fx.file("ckpt_d"));
        std::fs::copy(fx.file("ckpt_a"), fx.file("ckpt_c")).unwrap();
        let damaged_e = std::fs::read(fx.file("ckpt_e")).unwrap();
        let r = repair(fx.path(), Some(&sql), RepairOptions::default()).unwrap();
        assert!(r.after.is_clean(), "{:?}", r.after.problems);
        for (id, original) in ["ckpt_c", "ckpt_d", "ckpt_e"].iter().zip(&originals) {
            assert_eq!(&std::fs::read(fx.file(id)).unwrap(), original, "{id}");
            assert!(
                r.repairs
                    .iter()
                    .any(|a| matches!(a, Repair::Restored { id: i, .. } if i.as_str() == *id)),
                "{id}: {:?}",
                r.repairs
            );
        }
        // The damaged originals are kept all the same.
        let q = fx.path().join(".caf/quarantine");
        assert_eq!(std::fs::read(q.join("ckpt_e.json")).unwrap(), damaged_e);
        assert!(q.join("ckpt_e.json.why.txt").is_file());
        assert!(q.join("ckpt_d.json").is_file() && q.join("ckpt_c.json").is_file());
        // A clean store is left alone.
        let again = repair(fx.path(), Some(&sql), RepairOptions::default()).unwrap();
        assert!(again.found.is_clean() && again.repairs.is_empty());
    });
}

#[test]
fn files_and_database_are_compared_from_checksums() {
    on_each_backend("compare_with_files", |db| {
        let fx = Fixture::new(db);
        let sql = SqlStore::open(&db.url()).unwrap();
        let files = FileStore::open(fx.path()).unwrap();
        assert_eq!(sql.compare_with_files(&files).unwrap().count(true), 0);
        corrupt(&fx.file("ckpt_e"), false);
        sql.save(&checkpoint("ckpt_extra", "exec_other", 7))
            .unwrap();
        let mut other = checkpoint("ckpt_f", "exec_other", 6);
        other.metadata.labels = vec!["elsewhere".into()];
        sql.save(&other).unwrap();
        sql.delete_checkpoint(&ckpt_id("ckpt_a")).unwrap();
        let files = FileStore::open(fx.path()).unwrap();
        let d = sql.compare_with_files(&files).unwrap();
        assert_eq!(d.damaged_files, [ckpt_id("ckpt_e")]);
        assert_eq!(d.only_in_database, [ckpt_id("ckpt_extra")]);
        assert_eq!(d.different, [ckpt_id("ckpt_f")]);
        assert_eq!(d.only_in_files, [ckpt_id("ckpt_a")]);
        assert_eq!((d.count(true), d.count(false)), (4, 3));
        // The index records each file's checksum.
        let sums = files.indexed_checksums().unwrap();
        assert!(sums.values().all(Option::is_some), "{sums:?}");
        assert_eq!(files.list(&ListFilter::default()).unwrap().len(), 6);
    });
}
