//! Soak with kills: 8 writer processes (`caf-kill-writer`) each save 250 checkpoints into one
//! store while a killer SIGKILLs random writers at random moments and restarts them, 50 kills
//! in all; in files + SQLite and in SQLite only. Each writer logs the id of each save once
//! `save` returned. At the end every logged id loads and validates, `caf verify` is clean and
//! the database equals the files. The same on PostgreSQL (files + PostgreSQL), without kills.
//!
//! `CAF_SOAK_LONG=1` runs the long variant: 2,500 checkpoints per writer and 500 kills.

use crate::logged;
use crate::postgres_faults::rows_load_and_validate;
use crate::sql_common::{pg_base, pg_database};
use caf_core::{CheckpointId, CheckpointManager, ExecutionId};
use caf_sql::{Access, Location, Store};
use caf_tests::cli::{run_caf, run_caf_within, s};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WRITERS: usize = 8;

/// Whether `CAF_SOAK_LONG` asks for the long variant.
fn long() -> bool {
    std::env::var_os("CAF_SOAK_LONG").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Checkpoints per writer, and kills in all (the long variant with `CAF_SOAK_LONG`).
fn sizes() -> (usize, usize) {
    if long() {
        (2500, 500)
    } else {
        (250, 50)
    }
}

/// One writer process, restarted after each kill.
struct Writer {
    args: Vec<OsString>,
    log: PathBuf,
    errors: PathBuf,
    child: Option<Child>,
    done: bool,
}

impl Writer {
    fn new(n: usize, dir: &Path, logs: &Path, mode: &[&str], count: usize) -> Self {
        let log = logs.join(format!("w{n}.log"));
        let mut args: Vec<OsString> = vec![dir.into(), format!("exec_soak_{n}").into()];
        args.extend(mode.iter().map(OsString::from));
        args.extend(["--log".into(), log.clone().into_os_string()]);
        args.extend(["--count".into(), count.to_string().into()]);
        Self {
            args,
            log,
            errors: logs.join(format!("w{n}.err")),
            child: None,
            done: false,
        }
    }

    fn spawn(&mut self) {
        let errors = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.errors)
            .unwrap();
        self.child = Some(
            Command::new(env!("CARGO_BIN_EXE_caf-kill-writer"))
                .args(&self.args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(errors))
                .spawn()
                .unwrap(),
        );
    }

    /// Notes a writer that finished; a writer that failed fails the test.
    fn poll(&mut self) {
        let Some(child) = &mut self.child else { return };
        if let Some(status) = child.try_wait().unwrap() {
            let errors = std::fs::read_to_string(&self.errors).unwrap_or_default();
            assert!(status.success(), "a writer failed ({status}): {errors}");
            self.child = None;
            self.done = true;
        }
    }

    fn kill_and_restart(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.success() {
            // It finished just before the signal.
            self.done = true;
            return;
        }
        self.spawn();
    }
}

/// Runs the writers to the end, SIGKILLing `kills` of them at random moments spread over the
/// run (by how much has been saved, so the kills do not depend on speed). Returns the ids each
/// writer logged.
fn run_writers(dir: &Path, mode: &[&str], count: usize, kills: usize) -> Vec<Vec<String>> {
    let logs = dir.parent().unwrap().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let mut writers: Vec<Writer> = (0..WRITERS)
        .map(|n| Writer::new(n, dir, &logs, mode, count))
        .collect();
    for w in &mut writers {
        w.spawn();
    }
    let mut rng = fastrand::Rng::new();
    eprintln!("soak seed: {}", rng.get_seed());
    let total = WRITERS * count;
    // The k-th kill once (k + 1) / (kills + 10) of the saves are acknowledged: the last one
    // still leaves a sixth of the work to do with every writer running.
    let threshold = |k: usize| (k + 1) * total / (kills + 10);
    let mut done_kills = 0;
    let started = Instant::now();
    while writers.iter().any(|w| !w.done) {
        assert!(
            started.elapsed() < Duration::from_secs(1200),
            "the soak has not finished in 20 minutes"
        );
        for w in &mut writers {
            w.poll();
        }
        let saved: usize = writers.iter().map(|w| logged(&w.log).len()).sum();
        if done_kills < kills && saved >= threshold(done_kills) {
            let running: Vec<usize> = (0..WRITERS)
                .filter(|&i| writers[i].child.is_some())
                .collect();
            if !running.is_empty() {
                std::thread::sleep(Duration::from_millis(rng.u64(0..15)));
                writers[running[rng.usize(..running.len())]].kill_and_restart();
                done_kills += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(done_kills, kills, "the writers finished before every kill");
    eprintln!(
        "soak: {WRITERS} writers x {count} saves, {kills} kills, {:?}",
        started.elapsed()
    );
    writers
        .iter()
        .map(|w| {
            let ids = logged(&w.log);
            assert_eq!(ids.len(), count, "{}: logged ids", w.log.display());
            let unique: BTreeSet<&String> = ids.iter().collect();
            assert_eq!(
                unique.len(),
                count,
                "{}: an id logged twice",
                w.log.display()
            );
            ids
        })
        .collect()
}

/// Every id the writers logged is in `listed`.
fn assert_logged_in(listed: &BTreeSet<CheckpointId>, logs: &[Vec<String>]) {
    let listed: BTreeSet<&str> = listed.iter().map(CheckpointId::as_str).collect();
    for id in logs.iter().flatten() {
        assert!(
            listed.contains(id.as_str()),
            "logged {id} is not in the store"
        );
    }
}

/// Every execution resumes from its newest checkpoint without skipping any, at a step no
/// earlier than the saves its writer logged.
fn check_resumes(store: &Store, logs: &[Vec<String>]) {
    let manager = CheckpointManager::new(store);
    for (n, ids) in logs.iter().enumerate() {
        let e = ExecutionId::new(format!("exec_soak_{n}")).unwrap();
        let r = manager.restore_latest(&e).unwrap();
        assert!(r.skipped.is_empty(), "{e}: skipped {:?}", r.skipped);
        assert!(r.checkpoint.metadata.step_number >= ids.len() as u64);
    }
}

/// Files + database: every logged checkpoint has its file, `caf verify` is clean — every file
/// loads and validates (schema, checksum), the index agrees, and the database equals the files
/// (verify reports any checkpoint one has and the other lacks or holds otherwise, and loads
/// every row back to compare it with its file).
fn check_hybrid(dir: &Path, db: Option<String>, logs: &[Vec<String>]) {
    let started = Instant::now();
    let location = Location::new(dir, db.clone(), false);
    let store = location.open(Access::Update).unwrap();
    assert!(matches!(store, Store::Hybrid(_)), "a hybrid store");
    let listed: BTreeSet<CheckpointId> = store
        .list(&Default::default())
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_logged_in(&listed, logs);
    check_resumes(&store, logs);
    drop(store);
    let mut args = vec!["--dir", s(dir)];
    if let Some(db) = &db {
        args.extend(["--db", db.as_str()]);
    }
    args.extend(["--json", "verify"]);
    // The long variant's store holds some 20 GB of checkpoints to read and compare.
    let limit = Duration::from_secs(if long() { 3600 } else { 120 });
    let report = run_caf_within(dir.parent().unwrap(), &args, &[], limit)
        .ok()
        .json();
    assert_eq!(
        report["problems"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    assert_eq!(
        report["files"].as_u64(),
        Some(listed.len() as u64),
        "{report}"
    );
    assert_eq!(report["rows"], report["files"], "{report}");
    eprintln!("soak: checked in {:?}", started.elapsed());
}

#[test]
fn soak_files_and_sqlite_with_kills() {
    let (count, kills) = sizes();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let logs = run_writers(&dir, &["--own-db"], count, kills);
    check_hybrid(&dir, None, &logs);
}

#[test]
fn soak_sqlite_only_with_kills() {
    let (count, kills) = sizes();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let url = format!("sqlite://{}", tmp.path().join("soak.db").display());
    let logs = run_writers(&dir, &["--db", &url, "--no-files"], count, kills);
    assert!(!dir.exists(), "a database-only store wrote files");
    let store = Location::new(&dir, Some(url.clone()), true)
        .open(Access::Read)
        .unwrap();
    // Every checkpoint the database holds loads and validates, the logged ones and any other (a
    // save killed after its commit and before its log line is whole too).
    let all = rows_load_and_validate(&store);
    assert_logged_in(&all, &logs);
    check_resumes(&store, &logs);
    let out = run_caf(
        tmp.path(),
        &["--db", &url, "sql", "PRAGMA integrity_check"],
        &[],
    )
    .ok();
    assert!(out.out().contains("ok"), "{}", out.describe());
}

#[test]
fn soak_files_and_postgres() {
    let Some(base) = pg_base("soak_files_and_postgres") else {
        return;
    };
    let _serial = crate::postgres_faults::SERVER.lock();
    let (count, _) = sizes();
    let db = pg_database(&base);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let logs = run_writers(&dir, &["--db", db.url()], count, 0);
    check_hybrid(&dir, Some(db.url().to_string()), &logs);
}
