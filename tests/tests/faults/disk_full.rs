//! A full disk: a small tmpfs under the whole store, under its `.caf/` alone, or under its SQLite
//! database; files only, files + SQLite, SQLite only. Each test saves until the disk is full,
//! then checks that
//!
//! - the failing save says "no space left on device" and names the path;
//! - every checkpoint acknowledged before it is still there and valid;
//! - the store is consistent: no file under a checkpoint name but the acknowledged ones, `caf
//!   verify`'s checks pass (index, database equal to the files), no temporary file is left;
//! - once space is freed, saving resumes with the same store, with no repair step (caf's
//!   choice: nothing a full disk leaves needs repairing).

use crate::sql_common::runs::agent_run;
use crate::Tmpfs;
use caf_core::format::{decode, Checkpoint, Limits};
use caf_core::store::read_index;
use caf_core::{CheckpointStore, Error};
use caf_sql::{Access, Location, SqlStore, Store};
use caf_tests::json_file_ids;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Fills the file system of `dir` with a ballast file, then gives back `headroom` bytes of it:
/// the next writes find the disk full after about that much.
fn fill_leaving(dir: &Path, headroom: u64) -> PathBuf {
    let path = dir.join("ballast");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0xA5u8; 64 * 1024];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling {}: {e}", dir.display()),
        }
    }
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(headroom)).unwrap();
    path
}

/// What the save that found the disk full said.
fn assert_says_full(e: &Error, path_under: &Path) {
    let text = e.to_string();
    assert!(
        text.contains("no space left on device"),
        "the error does not say the disk is full: {text}"
    );
    assert!(
        text.contains(&path_under.display().to_string()),
        "the error does not name a path under {}: {text}",
        path_under.display()
    );
    assert_eq!(text.lines().count(), 1, "one line: {text}");
}

/// Saves `run` in order until a save fails; returns how many were acknowledged and the error.
fn save_until_full(store: &dyn CheckpointStore, run: &[Checkpoint]) -> (usize, Error) {
    for (i, c) in run.iter().enumerate() {
        if let Err(e) = store.save(c) {
            assert!(i >= 3, "the disk was full after only {i} saves: {e}");
            return (i, e);
        }
    }
    panic!("{} saves never filled the disk", run.len());
}

/// Checks a store of files (and its database, if any) after a full disk: exactly the
/// acknowledged checkpoints are there, whole; the index and the database agree with the files.
fn check_files(dir: &Path, db: Option<&SqlStore>, acknowledged: &[Checkpoint], when: &str) {
    let expected: BTreeSet<String> = acknowledged.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(json_file_ids(dir), expected, "{when}: the checkpoint files");
    for c in acknowledged {
        let path = dir.join(format!("{}.json", c.id));
        let bytes = std::fs::read(&path).unwrap();
        let d = decode(&bytes, &Limits::default())
            .unwrap_or_else(|e| panic!("{when}: {}: {e}", path.display()));
        assert_eq!(&d.checkpoint, c, "{when}: {}", path.display());
    }
    if let Some(index) = read_index(dir).unwrap() {
        for (id, entry) in &index.entries {
            assert!(expected.contains(id.as_str()), "{when}: index lists {id}");
            assert!(
                entry.matches_file(&dir.join(format!("{id}.json"))),
                "{when}: the index entry of {id} is not its file's"
            );
        }
    }
    let report = caf_sql::verify::verify(dir, db).unwrap();
    assert!(
        report.is_clean(),
        "{when}: caf verify: {:#?}",
        report.problems
    );
    if let Some(db) = db {
        let rows: BTreeSet<String> = db
            .list(&Default::default())
            .unwrap()
            .into_iter()
            .map(|s| s.id.to_string())
            .collect();
        assert_eq!(rows, expected, "{when}: the database's checkpoints");
    }
}

/// Temporary files left in `DIR/.caf/tmp` (spare files, made empty beforehand for the next
/// saves, are allowed while a hybrid store is open: `spares_allowed`).
fn assert_no_temp_files(dir: &Path, spares_allowed: bool, when: &str) {
    let mut left = Vec::new();
    for d in [dir.join(".caf").join("tmp"), dir.to_path_buf()] {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let spare = name.starts_with(".caf-spare-") && e.metadata().unwrap().len() == 0;
            if name.starts_with(".caf-tmp-") || (name.starts_with(".caf-spare-") && !spares_allowed)
            {
                left.push(name);
            } else if name.starts_with(".caf-spare-") && !spare {
                left.push(format!("{name} (a spare file that is not empty)"));
            }
        }
    }
    assert!(left.is_empty(), "{when}: temporary files left: {left:?}");
}

/// Which store a test saves into.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Files only.
    Files,
    /// Files plus the directory's SQLite database (`DIR/.caf/caf.db`).
    Hybrid,
    /// Files plus a SQLite database elsewhere (`--db sqlite://…`).
    HybridWithDb,
}

/// Saves into a store in `dir` until the disk under `full` is full; checks the store; frees the
/// space and saves again with the same store; checks again after reopening.
fn fill_and_recover(kind: Kind, dir: &Path, db_url: Option<String>, full: &Path, headroom: u64) {
    let when = format!("{kind:?}, full under {}", full.display());
    let location = Location::new(dir, db_url, false);
    let access = match kind {
        Kind::Files => Access::Create,
        Kind::Hybrid | Kind::HybridWithDb => Access::CreateWithDatabase,
    };
    let store = location.open(access).unwrap();
    assert_eq!(
        matches!(store, Store::Hybrid(_)),
        kind != Kind::Files,
        "{when}: the kind of store"
    );
    let run = agent_run(1, 120);
    let ballast = fill_leaving(full, headroom);
    let (saved, error) = save_until_full(&*store, &run);
    assert_says_full(&error, full);

    check_files(
        dir,
        store.sql(),
        &run[..saved],
        &format!("{when}: when full"),
    );
    assert_no_temp_files(dir, true, &when);
    // Still full: saving again fails the same way and changes nothing.
    let again = store.save(&run[saved]).unwrap_err();
    assert_says_full(&again, full);
    check_files(
        dir,
        store.sql(),
        &run[..saved],
        &format!("{when}: full, again"),
    );

    // Space freed: the same store saves again, the failed checkpoint first.
    std::fs::remove_file(&ballast).unwrap();
    let resumed = saved + 3;
    for c in &run[saved..resumed] {
        store
            .save(c)
            .unwrap_or_else(|e| panic!("{when}: after freeing space: {e}"));
    }
    check_files(
        dir,
        store.sql(),
        &run[..resumed],
        &format!("{when}: resumed"),
    );
    drop(store);
    assert_no_temp_files(dir, false, &format!("{when}: closed"));

    // Opened again: the index on disk lists every file.
    let store = location.open(Access::Update).unwrap();
    let listed = store.list(&Default::default()).unwrap().len();
    assert_eq!(listed, resumed, "{when}: listed after reopening");
    let index = read_index(dir).unwrap().unwrap();
    assert_eq!(index.entries.len(), resumed, "{when}: the index on disk");
    check_files(
        dir,
        store.sql(),
        &run[..resumed],
        &format!("{when}: reopened"),
    );
}

#[test]
fn files_only_on_a_full_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount("files_only_on_a_full_disk", &tmp.path().join("mnt"), "4m") else {
        return;
    };
    let dir = fs.path().join("store");
    fill_and_recover(Kind::Files, &dir, None, fs.path(), 512 * 1024);
}

#[test]
fn files_and_sqlite_on_a_full_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "files_and_sqlite_on_a_full_disk";
    let Some(fs) = Tmpfs::mount(test, &tmp.path().join("mnt"), "4m") else {
        return;
    };
    let dir = fs.path().join("store");
    fill_and_recover(Kind::Hybrid, &dir, None, fs.path(), 512 * 1024);
}

#[test]
fn files_and_sqlite_with_a_full_disk_under_caf_alone() {
    // The checkpoint files have room; `.caf/` (staging, index, database) does not. A rename
    // cannot cross file systems, so the files are staged beside their place.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let test = "files_and_sqlite_with_a_full_disk_under_caf_alone";
    let Some(fs) = Tmpfs::mount(test, &dir.join(".caf"), "4m") else {
        return;
    };
    fill_and_recover(Kind::Hybrid, &dir, None, fs.path(), 1024 * 1024);
}

#[test]
fn a_full_caf_directory_does_not_stop_a_files_only_store() {
    // Files only, `.caf/` full: the files have room, so saves succeed; the index (a cache of the
    // files) cannot grow, keeps what it could not write, and writes it once there is room.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let test = "a_full_caf_directory_does_not_stop_a_files_only_store";
    let Some(fs) = Tmpfs::mount(test, &dir.join(".caf"), "1m") else {
        return;
    };
    let location = Location::new(&dir, None, false);
    let store = location.open(Access::Create).unwrap();
    let run = agent_run(1, 40);
    let ballast = fill_leaving(fs.path(), 4 * 1024);
    for c in &run[..30] {
        store.save(c).unwrap();
    }
    let on_disk = read_index(&dir).unwrap().unwrap().entries.len();
    assert!(
        on_disk < 30,
        "the index on disk did not fill ({on_disk} entries)"
    );
    assert_eq!(store.list(&Default::default()).unwrap().len(), 30);
    check_files(&dir, None, &run[..30], "index full");
    // Another process sees every file (opening reads the files the index lacks).
    let other = caf_core::FileStore::open(&dir).unwrap();
    assert_eq!(other.list(&Default::default()).unwrap().len(), 30);
    drop(other);
    assert_no_temp_files(&dir, false, "index full");

    std::fs::remove_file(&ballast).unwrap();
    store.save(&run[30]).unwrap();
    let index = read_index(&dir).unwrap().unwrap();
    assert_eq!(index.entries.len(), 31, "the index on disk caught up");
    check_files(&dir, None, &run[..31], "room again");
}

#[test]
fn a_full_disk_under_the_sqlite_database_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "a_full_disk_under_the_sqlite_database_alone";
    let Some(fs) = Tmpfs::mount(test, &tmp.path().join("db"), "4m") else {
        return;
    };
    let url = format!("sqlite://{}", fs.path().join("caf.db").display());
    fill_and_recover(
        Kind::HybridWithDb,
        &tmp.path().join("store"),
        Some(url),
        fs.path(),
        512 * 1024,
    );
}

#[test]
fn sqlite_only_on_a_full_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount("sqlite_only_on_a_full_disk", &tmp.path().join("db"), "4m") else {
        return;
    };
    let path = fs.path().join("caf.db");
    let url = format!("sqlite://{}", path.display());
    let db = SqlStore::open(&url).unwrap();
    let run = agent_run(1, 120);
    let ballast = fill_leaving(fs.path(), 512 * 1024);
    let (saved, error) = save_until_full(&db, &run);
    assert_says_full(&error, fs.path());

    let check = |db: &SqlStore, n: usize, when: &str| {
        let listed: BTreeSet<String> = db
            .list(&Default::default())
            .unwrap()
            .into_iter()
            .map(|s| s.id.to_string())
            .collect();
        let expected: BTreeSet<String> = run[..n].iter().map(|c| c.id.to_string()).collect();
        assert_eq!(listed, expected, "{when}: the database's checkpoints");
        for c in &run[..n] {
            assert_eq!(&db.load(&c.id).unwrap(), c, "{when}: {}", c.id);
        }
    };
    check(&db, saved, "when full");
    std::fs::remove_file(&ballast).unwrap();
    for c in &run[saved..saved + 3] {
        db.save(c)
            .unwrap_or_else(|e| panic!("after freeing space: {e}"));
    }
    check(&db, saved + 3, "resumed");
    drop(db);
    let db = SqlStore::open(&url).unwrap();
    check(&db, saved + 3, "reopened");
    let files: Vec<String> = std::fs::read_dir(fs.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.iter().all(|f| f.starts_with("caf.db")),
        "stray files: {files:?}"
    );
}

#[test]
fn caf_save_on_a_full_disk_fails_with_one_line_and_exit_1() {
    let sb = caf_tests::cli::Sandbox::new();
    let test = "caf_save_on_a_full_disk_fails_with_one_line_and_exit_1";
    let Some(fs) = Tmpfs::mount(test, &sb.path().join("mnt"), "2m") else {
        return;
    };
    let store = fs.path().join("store");
    let store_arg = caf_tests::cli::s(&store);
    let parts = sb.path().join("parts.json");
    let big = "x".repeat(64 * 1024);
    std::fs::write(
        &parts,
        serde_json::to_vec(&serde_json::json!({
            "agent_id": "agent",
            "context": {"variables": {"notes": big}, "state": {}, "history": []},
        }))
        .unwrap(),
    )
    .unwrap();
    let parts_arg = caf_tests::cli::s(&parts);
    let args = [
        "--dir",
        store_arg,
        "save",
        "-e",
        "exec_full",
        "-f",
        parts_arg,
    ];
    let save = || caf_tests::cli::run_caf(sb.path(), &args, &[]);
    save().ok();
    fill_leaving(fs.path(), 16 * 1024);
    let before = caf_tests::cli::files(&store);
    let out = save().fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("no space left on device") && out.err().contains(store_arg),
        "{}",
        out.describe()
    );
    assert_eq!(
        caf_tests::cli::files(&store),
        before,
        "the failed save changed the store's files"
    );
}

/// A store that saves many times journals its saves ([`Location::open_journaled`]). On a disk
/// that fills after its journal was made, a save whose file or rows find no room is still in
/// the journal: acknowledged, and written later. The next call says the disk is full; once
/// space is freed, the same store writes what it acknowledged and goes on.
#[test]
fn a_journaled_store_on_a_full_disk_loses_nothing_it_acknowledged() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "a_journaled_store_on_a_full_disk_loses_nothing_it_acknowledged";
    // Room for the journal (16 MiB, made when the store opens) and the saves.
    let Some(fs) = Tmpfs::mount(test, &tmp.path().join("mnt"), "24m") else {
        return;
    };
    let dir = fs.path().join("store");
    let location = Location::new(&dir, None, false);
    let store = location.open_journaled(Access::CreateWithDatabase).unwrap();
    assert!(matches!(store, Store::Journaled(_)), "a journaled store");
    let run = agent_run(1, 120);
    let ballast = fill_leaving(fs.path(), 512 * 1024);
    let (acknowledged, error) = save_until_full(&*store, &run);
    assert_says_full(&error, fs.path());
    // Reading says so too, until there is room.
    assert_says_full(&store.list(&Default::default()).unwrap_err(), fs.path());
    assert!(
        json_file_ids(&dir).len() < acknowledged,
        "every acknowledged save has its file: the writer never failed"
    );

    std::fs::remove_file(&ballast).unwrap();
    store.flush().unwrap();
    let when = "journaled, space freed";
    check_files(&dir, store.sql(), &run[..acknowledged], when);
    for c in &run[acknowledged..acknowledged + 3] {
        store
            .save(c)
            .unwrap_or_else(|e| panic!("{when}: saving again: {e}"));
    }
    drop(store);
    let store = location.open(Access::Update).unwrap();
    check_files(&dir, store.sql(), &run[..acknowledged + 3], "reopened");
}

/// Where there is no room for a journal, a store that saves many times flushes its saves as
/// the hybrid store does, and leaves no part of a journal behind.
#[test]
fn without_room_for_a_journal_saves_are_flushed_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let test = "without_room_for_a_journal_saves_are_flushed_as_before";
    let Some(fs) = Tmpfs::mount(test, &tmp.path().join("mnt"), "4m") else {
        return;
    };
    let dir = fs.path().join("store");
    let location = Location::new(&dir, None, false);
    let store = location.open_journaled(Access::CreateWithDatabase).unwrap();
    assert!(matches!(store, Store::Hybrid(_)), "a hybrid store");
    let slots: Vec<_> = std::fs::read_dir(dir.join(".caf/journal"))
        .map(|d| d.filter_map(|e| e.ok()).collect())
        .unwrap_or_default();
    assert!(slots.is_empty(), "a journal slot was left: {slots:?}");
    let run = agent_run(1, 3);
    for c in &run {
        store.save(c).unwrap();
    }
    check_files(&dir, store.sql(), &run, "no journal");
}
