//! A hybrid store's one flush per save: the database commit is the durability point, the file is
//! put in place unflushed and recorded as such, and after a power loss the files it may have
//! lost come back from the database, byte for byte.
//!
//! A power cut is simulated as it leaves things: the store is abandoned (its flusher never
//! runs), the records of its unflushed files are moved to an earlier boot, and the newest files
//! are deleted, truncated or zeroed, as a lost page cache can leave them.
//!
//! SQLite always; PostgreSQL too when `CAF_TEST_POSTGRES_URL` is set.

#![allow(clippy::unwrap_used)]

mod sql_common;

use caf_core::{CheckpointStore, FileStore};
use caf_sql::{Access, HybridOptions, HybridStore, Location, SqlStore, Store};
use sql_common::runs::agent_run;
use sql_common::{on_each_backend, TempSql};
use std::path::Path;
use std::time::Duration;

const EARLIER_BOOT: &str = "00000000-0000-0000-0000-000000000000";

/// A hybrid store over `dir` whose flusher waits an hour (so that nothing is flushed unless the
/// test says so).
fn slow_flushing(dir: &Path, db: &TempSql) -> HybridStore {
    HybridStore::with_options(
        FileStore::open(dir).unwrap(),
        SqlStore::open(&db.url()).unwrap(),
        HybridOptions {
            flush_every: Duration::from_secs(3600),
        },
    )
    .unwrap()
}

fn unflushed_rows(db: &TempSql) -> usize {
    let n = db.store().table_counts().unwrap().unflushed_files;
    usize::try_from(n).unwrap()
}

/// What a power cut leaves: the records of unflushed files belong to an earlier boot, and so
/// does the boot marker.
fn reboot(dir: &Path, db: &TempSql) {
    db.execute_raw(
        &format!("UPDATE unflushed_files SET boot_id = '{EARLIER_BOOT}'"),
        &format!("UPDATE unflushed_files SET boot_id = '{EARLIER_BOOT}'"),
    );
    let markers = dir.join(".caf").join("unflushed");
    for e in std::fs::read_dir(&markers).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    std::fs::write(markers.join(EARLIER_BOOT), b"").unwrap();
}

#[test]
fn files_lost_in_a_power_cut_come_back_from_the_database_byte_for_byte() {
    on_each_backend("power_cut", |db| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let run = agent_run(1, 12);
        let store = slow_flushing(dir, db);
        for c in &run {
            store.save(c).unwrap();
        }
        // One checkpoint deleted before the cut must stay deleted.
        let gone = &run[3].id;
        assert!(store.delete(gone).unwrap());
        assert_eq!(
            unflushed_rows(db),
            run.len() + 1,
            "one record per save, and one for the delete"
        );
        let expected: Vec<Vec<u8>> = run
            .iter()
            .map(|c| std::fs::read(store.files().path_of(&c.id)).unwrap_or_default())
            .collect();
        let paths: Vec<_> = run.iter().map(|c| store.files().path_of(&c.id)).collect();
        store.abandon();
        reboot(dir, db);

        // The newest files as a power loss may leave them.
        std::fs::remove_file(&paths[11]).unwrap();
        std::fs::remove_file(&paths[10]).unwrap();
        let half = expected[9].len() / 2;
        std::fs::write(&paths[9], &expected[9][..half]).unwrap();
        std::fs::write(&paths[8], vec![0u8; expected[8].len()]).unwrap();
        std::fs::write(&paths[7], b"").unwrap();

        // Reading is enough: the database writes them again.
        let loc = Location::new(dir, Some(db.url()), false);
        let Store::Files(files) = loc.open(Access::Read).unwrap() else {
            panic!("reading opens the files");
        };
        for (i, c) in run.iter().enumerate() {
            if &c.id == gone {
                assert!(!paths[i].exists(), "a deleted checkpoint came back");
                continue;
            }
            assert_eq!(std::fs::read(&paths[i]).unwrap(), expected[i], "file {i}");
            assert_eq!(&files.load(&c.id).unwrap(), c);
        }
        assert!(files.problems().is_empty(), "{:?}", files.problems());
        assert_eq!(
            unflushed_rows(db),
            0,
            "the earlier boot's records are forgotten"
        );
        let markers = dir.join(".caf").join("unflushed");
        assert!(
            !markers.join(EARLIER_BOOT).exists(),
            "the earlier boot's marker is removed"
        );
    });
}

#[test]
fn a_file_missing_in_this_boot_is_written_again_when_the_store_opens() {
    // A writer killed between its commit and its rename leaves a recorded file missing.
    on_each_backend("killed_before_rename", |db| {
        let tmp = tempfile::tempdir().unwrap();
        let run = agent_run(1, 3);
        let store = slow_flushing(tmp.path(), db);
        for c in &run {
            store.save(c).unwrap();
        }
        let path = store.files().path_of(&run[2].id);
        let bytes = std::fs::read(&path).unwrap();
        store.abandon();
        std::fs::remove_file(&path).unwrap();
        let store = slow_flushing(tmp.path(), db);
        assert_eq!(store.recovery().rewritten, vec![run[2].id.clone()]);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(store.load(&run[2].id).unwrap(), run[2]);
    });
}

#[test]
fn the_flusher_forgets_the_records_of_synced_files() {
    on_each_backend("flusher", |db| {
        let tmp = tempfile::tempdir().unwrap();
        let run = agent_run(1, 4);
        let store = HybridStore::with_options(
            FileStore::open(tmp.path()).unwrap(),
            SqlStore::open(&db.url()).unwrap(),
            HybridOptions {
                flush_every: Duration::from_millis(20),
            },
        )
        .unwrap();
        store.save(&run[0]).unwrap();
        store.save(&run[1]).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while unflushed_rows(db) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(unflushed_rows(db), 0, "the background flusher forgot them");
        store.save(&run[2]).unwrap();
        store.flush().unwrap();
        assert_eq!(unflushed_rows(db), 0, "flush() forgets them at once");
        store.save(&run[3]).unwrap();
        drop(store);
        assert_eq!(unflushed_rows(db), 0, "dropping the store flushes last");
    });
}

#[test]
fn a_refused_save_leaves_no_record_and_no_file() {
    on_each_backend("refused_save", |db| {
        let tmp = tempfile::tempdir().unwrap();
        let run = agent_run(1, 2);
        let store = slow_flushing(tmp.path(), db);
        store.save(&run[0]).unwrap();
        db.fail_inserts_of(run[1].id.as_str());
        assert!(store.save(&run[1]).is_err());
        db.stop_failing();
        assert!(!store.files().path_of(&run[1].id).exists());
        assert_eq!(unflushed_rows(db), 1);
    });
}
