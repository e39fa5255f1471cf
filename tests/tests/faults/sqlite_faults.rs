//! A hybrid store's SQLite database (`DIR/.caf/caf.db`) deleted, truncated, overwritten with
//! garbage, its `-wal` deleted after a crash, or read-only. caf's choices:
//!
//! - missing or damaged: `caf verify` says so in one line; `caf verify --repair` and
//!   `caf reindex` move a damaged database to the quarantine (never deleting it) and rebuild it
//!   from the files; commands that need the database fail with one line that names those two
//!   commands and change nothing; commands that read the files still work;
//! - behind the files (emptied, or its `-wal` lost): `caf verify` lists the checkpoints it
//!   lacks, `--repair` adds them;
//! - read-only: opened read-only, so reading commands work; a save fails with one line that
//!   says the database is read-only, and nothing is written.

use crate::sql_common::runs::agent_run;
use crate::{logged, Tmpfs};
use caf_core::CheckpointStore;
use caf_sql::verify::{repair_store, verify_store, DatabaseProblemKind, RepairOptions};
use caf_sql::{Access, Location, SqlStore, Store};
use caf_tests::cli::{files, json_files, run_caf, s, Out, Sandbox};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A store made by `caf demo` (files and their own database), and its checkpoint ids.
fn demo() -> (Sandbox, Vec<String>) {
    let sb = Sandbox::new();
    sb.caf(&["demo", "--steps", "4"]).ok();
    let ids = sb.list_ids();
    assert!(ids.len() >= 4, "{ids:?}");
    (sb, ids)
}

fn db_path(sb: &Sandbox) -> PathBuf {
    sb.store().join(".caf").join("caf.db")
}

/// `caf save` of a small checkpoint into execution `exec_more`.
fn save(sb: &Sandbox) -> Out {
    let parts = sb.path().join("parts.json");
    std::fs::write(&parts, br#"{"agent_id": "agent"}"#).unwrap();
    sb.caf(&["save", "-e", "exec_more", "-f", s(&parts)])
}

/// Checks what a missing or damaged database leaves working and refused, then repairs it with
/// `repair_args` and checks that the store is whole and its database equals its files.
fn refused_then_rebuilt(sb: &Sandbox, ids: &[String], says: &str, repair_args: &[&str]) {
    let checkpoints = json_files(&sb.store());
    // verify: one line for the database, then the count.
    let out = sb.caf(&["verify"]).fails(1);
    let errors = out.errors();
    assert_eq!(errors.len(), 2, "{}", out.describe());
    assert!(
        errors[0].contains(s(&db_path(sb))) && errors[0].contains(says),
        "{}",
        out.describe()
    );
    let json = sb.caf(&["--json", "verify"]).fails(1).json();
    assert_eq!(json["database_problem"]["path"], s(&db_path(sb)), "{json}");
    // What needs the database fails, naming the repair, and changes nothing.
    for out in [save(sb).fails(1), sb.caf(&["stats"]).fails(1)] {
        assert_eq!(out.errors().len(), 1, "{}", out.describe());
        assert!(
            out.err().contains("caf reindex") && out.err().contains("caf verify --repair"),
            "{}",
            out.describe()
        );
    }
    assert_eq!(json_files(&sb.store()), checkpoints, "a refused save wrote");
    // What reads the files works.
    assert_eq!(sb.list_ids(), ids);
    sb.caf(&["inspect", &ids[0]]).ok();

    sb.caf(repair_args).ok();
    assert_eq!(
        json_files(&sb.store()),
        checkpoints,
        "the repair changed a file"
    );
    sb.caf(&["verify"]).ok();
    let stats = sb.caf(&["--json", "stats"]).ok().json();
    assert_eq!(
        stats["totals"]["checkpoints"].as_u64(),
        Some(ids.len() as u64),
        "{stats}"
    );
    save(sb).ok();
    sb.caf(&["verify"]).ok();
}

#[test]
fn a_deleted_database_is_reported_and_rebuilt_from_the_files() {
    for repair in [&["verify", "--repair"][..], &["reindex"]] {
        let (sb, ids) = demo();
        std::fs::remove_file(db_path(&sb)).unwrap();
        refused_then_rebuilt(&sb, &ids, "database is missing", repair);
    }
}

/// Damage done to a database file.
fn damage(path: &Path, how: &str) {
    let bytes = std::fs::read(path).unwrap();
    let mut rng = fastrand::Rng::with_seed(7);
    let mut garbage = |n: usize| -> Vec<u8> { (0..n).map(|_| rng.u8(..)).collect() };
    let damaged = match how {
        "truncated" => bytes[..bytes.len() / 2].to_vec(),
        "garbage" => garbage(bytes.len()),
        // The header kept, every page after the first overwritten.
        "pages overwritten" => {
            let mut b = bytes[..4096].to_vec();
            b.extend(garbage(bytes.len() - 4096));
            b
        }
        other => panic!("unknown damage {other}"),
    };
    std::fs::write(path, damaged).unwrap();
}

#[test]
fn a_damaged_database_is_reported_set_aside_and_rebuilt_from_the_files() {
    for (how, repair) in [
        ("truncated", &["verify", "--repair"][..]),
        ("garbage", &["reindex"]),
        ("pages overwritten", &["verify", "--repair"]),
    ] {
        let (sb, ids) = demo();
        // Whatever a clean close left beside it goes too: the file alone is damaged.
        let db = db_path(&sb);
        damage(&db, how);
        let damaged = std::fs::read(&db).unwrap();
        refused_then_rebuilt(&sb, &ids, "database is damaged", repair);
        let kept = sb.store().join(".caf/quarantine/caf.db");
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            damaged,
            "{how}: the damaged database is kept in the quarantine"
        );
        assert!(sb.store().join(".caf/quarantine/caf.db.why.txt").is_file());
    }
}

#[test]
fn an_emptied_database_is_behind_the_files_and_repaired() {
    let (sb, ids) = demo();
    std::fs::write(db_path(&sb), b"").unwrap();
    let out = sb.caf(&["verify"]).fails(1);
    assert_eq!(out.errors().len(), ids.len() + 1, "{}", out.describe());
    assert!(
        out.err().contains("the database lacks it"),
        "{}",
        out.describe()
    );
    sb.caf(&["verify", "--repair"]).ok();
    sb.caf(&["verify"]).ok();
}

/// Starts a writer saving into `dir` (files and their own database) that logs each saved id;
/// returns it once it has logged `at_least` ids.
fn writer_with_saves(dir: &Path, log: &Path, at_least: usize) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_caf-kill-writer"))
        .arg(dir)
        .arg("exec_wal")
        .args(["--own-db", "--log", s(log), "--count", "100000"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("ready "),
        "the writer did not start: {line}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while logged(log).len() < at_least {
        assert!(
            std::time::Instant::now() < deadline,
            "the writer saves nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child
}

#[test]
fn a_wal_lost_after_a_crash_leaves_the_database_behind_and_repair_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let log = tmp.path().join("saved.log");
    let mut writer = writer_with_saves(&dir, &log, 20);
    writer.kill().unwrap();
    writer.wait().unwrap();
    let wal = dir.join(".caf/caf.db-wal");
    let len = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert!(
        len > 0,
        "the killed writer left no -wal: the test proves nothing"
    );
    std::fs::remove_file(&wal).unwrap();

    let saved = logged(&log);
    let location = Location::new(&dir, None, false);
    let report = verify_store(&location).unwrap();
    assert!(report.database_problem.is_none(), "{report:#?}");
    assert!(
        !report.problems.is_empty()
            && report
                .problems
                .iter()
                .all(|p| p.message == "the database lacks it"),
        "the database is behind the files: {:#?}",
        report.problems
    );
    let r = repair_store(&location, RepairOptions::default()).unwrap();
    assert!(r.after.is_clean(), "{:#?}", r.after);
    let Store::Hybrid(store) = location.open(Access::Update).unwrap() else {
        panic!("a hybrid store");
    };
    for id in &saved {
        let id = caf_core::CheckpointId::new(id).unwrap();
        store.files().load(&id).unwrap();
        store.sql().load_checkpoint(&id).unwrap();
    }
}

#[test]
fn a_database_deleted_under_an_open_hybrid_store_is_reported_and_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let location = Location::new(&dir, None, false);
    let store = location.open(Access::CreateWithDatabase).unwrap();
    let run = agent_run(1, 12);
    for c in &run[..6] {
        store.save(c).unwrap();
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!(".caf/caf.db{suffix}")));
    }
    // The open store writes on into the database it has open; the files hold every save.
    for c in &run[6..] {
        store.save(c).unwrap();
    }
    drop(store);
    let report = verify_store(&location).unwrap();
    let problem = report.database_problem.as_ref().unwrap();
    assert_eq!(problem.kind, DatabaseProblemKind::Missing);
    assert!(report.problems.is_empty(), "{report:#?}");
    assert!(matches!(
        location.open(Access::Create),
        Err(caf_sql::OpenError::MissingDatabase { .. })
    ));
    let r = repair_store(&location, RepairOptions::default()).unwrap();
    assert!(r.after.is_clean(), "{:#?}", r.after);
    let db = location.database(false).unwrap();
    for c in &run {
        assert_eq!(&db.load(&c.id).unwrap(), c);
    }
}

#[test]
fn a_read_only_database_reads_and_refuses_saves_with_one_line() {
    let sb = Sandbox::new();
    let test = "a_read_only_database_reads_and_refuses_saves_with_one_line";
    let Some(fs) = Tmpfs::mount(test, &sb.path().join("ro"), "16m") else {
        return;
    };
    let db = fs.path().join("caf.db");
    let url = format!("sqlite://{}", db.display());
    let caf = |args: &[&str]| {
        let mut all = vec!["--dir", "store", "--db", url.as_str()];
        all.extend_from_slice(args);
        run_caf(sb.path(), &all, &[])
    };
    caf(&["demo", "--steps", "3"]).ok();
    let before = files(sb.path());
    let status = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(fs.path())
        .status()
        .unwrap();
    assert!(status.success(), "remounting read-only failed");

    // Reading works: the files, the database's statistics and SQL, verify.
    let ids = caf(&["--json", "list"]).ok().json();
    assert!(ids.as_array().is_some_and(|a| a.len() >= 3), "{ids}");
    let stats = caf(&["--json", "stats"]).ok().json();
    assert!(
        stats["totals"]["checkpoints"].as_u64() >= Some(3),
        "{stats}"
    );
    caf(&["sql", "SELECT count(*) AS n FROM checkpoints"]).ok();
    caf(&["verify"]).ok();
    // A save fails with one line saying why, and writes nothing.
    let parts = sb.path().join("parts.json");
    std::fs::write(&parts, br#"{"agent_id": "agent"}"#).unwrap();
    let out = caf(&["save", "-e", "exec_ro", "-f", s(&parts)]).fails(1);
    assert_eq!(out.errors().len(), 1, "{}", out.describe());
    assert!(
        out.err().contains("read-only") && out.err().contains(s(&db)),
        "{}",
        out.describe()
    );
    let mut after = files(sb.path());
    after.remove("parts.json");
    assert_eq!(after, before, "a refused save wrote something");
    let tmp = sb.path().join("store/.caf/tmp");
    let staged: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".caf-tmp-"))
        .collect();
    assert!(staged.is_empty(), "temporary files left: {staged:?}");

    // The library says the same, typed.
    let store = SqlStore::open(&url).unwrap();
    let c = &agent_run(1, 1)[0];
    match store.save_checkpoint(c) {
        Err(caf_sql::SqlError::ReadOnlyDatabase { target, .. }) => {
            assert_eq!(target, db.display().to_string())
        }
        other => panic!("expected ReadOnlyDatabase, got {other:?}"),
    }
}
