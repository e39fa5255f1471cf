//! PostgreSQL faults: while 4 writers save in a loop (two into files + PostgreSQL, two into
//! PostgreSQL alone), their backends are terminated (`pg_terminate_backend`) and the server is
//! restarted (`pg_ctlcluster … restart`, as root). Then:
//!
//! - every failed save returned one clear error line, and nothing panicked;
//! - no half-written checkpoint is visible: every row loads whole and validates;
//! - the writers recovered by themselves (each store reconnects on its next call) and saved on;
//! - the database equals the files (hybrid), and holds exactly the acknowledged saves
//!   (database only): a save whose commit was cut off is taken out again.
//!
//! Needs `CAF_TEST_POSTGRES_URL`; the restart also needs root and `pg_ctlcluster`.

use crate::sql_common::{pg_base, pg_database};
use crate::{is_root, skip};
use caf_core::format::{decode, encode, Limits};
use caf_core::{
    CheckpointId, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore,
    ExecutionId, RuntimeState,
};
use caf_sql::verify::verify_store;
use caf_sql::{Access, Location, SqlStore};
use caf_tests::json_file_ids;
use diesel::connection::SimpleConnection;
use diesel::Connection;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Tests that use the PostgreSQL server take turns: one of them restarts it.
pub(crate) static SERVER: Mutex<()> = Mutex::new(());

/// The version of the one local PostgreSQL cluster `pg_ctlcluster` can restart, when this
/// process may (root).
fn cluster() -> Option<String> {
    if !is_root() {
        return None;
    }
    let found = Command::new("pg_ctlcluster").arg("--help").output().is_ok();
    let versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    (found && versions.len() == 1).then(|| versions[0].clone())
}

/// Restarts the server and waits until it accepts connections again.
fn restart(version: &str, base: &str) {
    let out = Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", version, "main", "restart"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg_ctlcluster restart: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while diesel::PgConnection::establish(base).is_err() {
        assert!(Instant::now() < deadline, "PostgreSQL did not come back");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Terminates every backend connected to the databases at `urls` (but its own).
fn terminate_backends(base: &str, urls: &[&str]) {
    let mut c = diesel::PgConnection::establish(base).unwrap();
    for url in urls {
        let name = url.rsplit('/').next().unwrap().split('?').next().unwrap();
        c.batch_execute(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        ))
        .unwrap();
    }
}

/// What a writer did.
#[derive(Default)]
struct Outcome {
    acknowledged: Vec<CheckpointId>,
    errors: Vec<String>,
}

/// One writer: saves in a loop into `store` until `stop`; counts its acknowledged saves.
fn writer(
    store: Box<dyn CheckpointStore + Send>,
    execution: &str,
    saved: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> Outcome {
    let manager = CheckpointManager::new(store);
    let id = ExecutionId::new(execution).unwrap();
    let mut state = RuntimeState::with_clock("pg-writer", id, Arc::new(caf_core::SystemClock));
    let mut out = Outcome::default();
    while !stop.load(Ordering::Relaxed) {
        let step = state.step_number();
        state.add_thought("reasoning", format!("step {step}"), Some(0.85));
        state.set_variable("step", serde_json::json!(step));
        state.complete_step(None);
        match manager.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        ) {
            Ok(c) => {
                out.acknowledged.push(c.id);
                saved.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                out.errors.push(e.to_string());
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    out
}

/// Waits until every counter has grown by `more` from `from`.
fn wait_for(counters: &[Arc<AtomicUsize>], from: &[usize], more: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while counters
        .iter()
        .zip(from)
        .any(|(c, f)| c.load(Ordering::Relaxed) < f + more)
    {
        assert!(Instant::now() < deadline, "{what}: a writer stopped saving");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn counts(counters: &[Arc<AtomicUsize>]) -> Vec<usize> {
    counters.iter().map(|c| c.load(Ordering::Relaxed)).collect()
}

/// Every checkpoint the store holds loads whole and validates (the schema holds, and it
/// re-encodes to a valid document); returns their ids.
pub(crate) fn rows_load_and_validate(db: &dyn CheckpointStore) -> BTreeSet<CheckpointId> {
    let mut ids = BTreeSet::new();
    for s in db.list(&Default::default()).unwrap() {
        let c = db.load(&s.id).unwrap();
        decode(&encode(&c).unwrap(), &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", s.id));
        ids.insert(s.id);
    }
    ids
}

#[test]
fn writers_survive_a_server_restart_and_terminated_backends() {
    let test = "writers_survive_a_server_restart_and_terminated_backends";
    let Some(base) = pg_base(test) else {
        return;
    };
    let _serial = SERVER.lock().unwrap_or_else(|p| p.into_inner());
    let cluster = cluster();
    if cluster.is_none() {
        skip(
            &format!("{test} (the restart)"),
            "restarting PostgreSQL needs root and pg_ctlcluster; only backends are terminated",
        );
    }
    let hybrid_db = pg_database(&base);
    let only_db = pg_database(&base);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let hybrid = Location::new(&dir, Some(hybrid_db.url().to_string()), false);

    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<AtomicUsize>> = (0..4).map(|_| Arc::default()).collect();
    let mut threads = Vec::new();
    for (w, saved) in counters.iter().enumerate() {
        let store: Box<dyn CheckpointStore + Send> = if w < 2 {
            Box::new(hybrid.open(Access::Create).unwrap())
        } else {
            Box::new(SqlStore::open(only_db.url()).unwrap())
        };
        let (saved, stop) = (Arc::clone(saved), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            writer(store, &format!("exec_pg_{w}"), saved, stop)
        }));
    }

    wait_for(&counters, &[0; 4], 5, "before the storm");
    let urls = [hybrid_db.url(), only_db.url()];
    for _ in 0..5 {
        terminate_backends(&base, &urls);
        std::thread::sleep(Duration::from_millis(150));
    }
    if let Some(version) = &cluster {
        restart(version, &base);
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(100));
            terminate_backends(&base, &urls);
        }
    }
    // The writers go on by themselves: each saves 10 more.
    let after_storm = counts(&counters);
    wait_for(&counters, &after_storm, 10, "after the storm");
    stop.store(true, Ordering::Relaxed);
    let outcomes: Vec<Outcome> = threads
        .into_iter()
        .map(|t| t.join().expect("a writer panicked"))
        .collect();

    let errors: Vec<&String> = outcomes.iter().flat_map(|o| &o.errors).collect();
    eprintln!(
        "{test}: {} saves acknowledged, {} failed",
        outcomes.iter().map(|o| o.acknowledged.len()).sum::<usize>(),
        errors.len()
    );
    for e in &errors {
        assert_eq!(e.lines().count(), 1, "one line: {e}");
        assert!(e.starts_with("postgres: "), "names the backend: {e}");
    }
    if cluster.is_some() {
        assert!(
            !errors.is_empty(),
            "the restart failed no save: proves nothing"
        );
    }

    // Files + PostgreSQL: the files are exactly the acknowledged saves; the database equals
    // them (verify loads every row and compares it with its file).
    let acknowledged = |range: std::ops::Range<usize>| -> BTreeSet<CheckpointId> {
        outcomes[range]
            .iter()
            .flat_map(|o| o.acknowledged.iter().cloned())
            .collect()
    };
    let files: BTreeSet<String> = json_file_ids(&dir);
    let expected: BTreeSet<String> = acknowledged(0..2).iter().map(|i| i.to_string()).collect();
    assert_eq!(files, expected, "the files are the acknowledged saves");
    let report = verify_store(&hybrid).unwrap();
    assert!(report.is_clean(), "verify: {report:#?}");
    assert_eq!(report.rows, Some(report.files));
    check_no_partial_files(&dir);

    // PostgreSQL alone: every row loads whole; the rows are the acknowledged saves.
    let db = SqlStore::open(only_db.url()).unwrap();
    assert_eq!(rows_load_and_validate(&db), acknowledged(2..4));
    let hybrid_rows = rows_load_and_validate(&SqlStore::open(hybrid_db.url()).unwrap());
    assert_eq!(hybrid_rows, acknowledged(0..2));
}

/// No temporary file is left beside the files or in `.caf/tmp` but empty spare files.
fn check_no_partial_files(dir: &Path) {
    for d in [dir.to_path_buf(), dir.join(".caf/tmp")] {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            let spare = name.starts_with(".caf-spare-") && e.metadata().unwrap().len() == 0;
            assert!(
                !name.starts_with(".caf-tmp-") && (spare || !name.starts_with(".caf-spare-")),
                "left in {}: {name}",
                d.display()
            );
        }
    }
}

#[test]
fn a_commit_cut_off_with_its_connection_fails_cleanly_and_the_next_save_works() {
    let test = "a_commit_cut_off_with_its_connection_fails_cleanly_and_the_next_save_works";
    let Some(base) = pg_base(test) else {
        return;
    };
    let _serial = SERVER.lock().unwrap_or_else(|p| p.into_inner());
    let db = pg_database(&base);
    let run = crate::sql_common::runs::agent_run(1, 4);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let location = Location::new(&dir, Some(db.url().to_string()), false);
    let store = location.open(Access::Create).unwrap();
    // A trigger deferred to the commit of checkpoint run[2] ends its own backend then.
    let mut c = diesel::PgConnection::establish(db.url()).unwrap();
    c.batch_execute(&format!(
        "CREATE FUNCTION caf_cut() RETURNS trigger AS $$ BEGIN \
         IF NEW.id = '{}' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; \
         RETURN NEW; END $$ LANGUAGE plpgsql; \
         CREATE CONSTRAINT TRIGGER caf_cut AFTER INSERT ON checkpoints \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION caf_cut();",
        run[2].id
    ))
    .unwrap();
    store.save(&run[0]).unwrap();
    store.save(&run[1]).unwrap();
    let e = store.save(&run[2]).unwrap_err().to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("lost while committing"), "{e}");
    assert!(!dir.join(format!("{}.json", run[2].id)).exists());
    // The same store reconnects by itself and saves on.
    store.save(&run[3]).unwrap();
    drop(store);
    let report = verify_store(&location).unwrap();
    assert!(report.is_clean(), "{report:#?}");
    let rows = rows_load_and_validate(&SqlStore::open(db.url()).unwrap());
    let expected: BTreeSet<CheckpointId> = [&run[0], &run[1], &run[3]]
        .iter()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(rows, expected);
}
