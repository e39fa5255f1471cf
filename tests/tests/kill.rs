//! Kill a checkpoint writer (SIGKILL) at random instants, over and over, in one store, and
//! check that only whole, valid checkpoints remain, that the index agrees with the files, and
//! that every execution can be resumed.

#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use caf_core::format::{decode, Limits};
use caf_core::{CheckpointManager, CheckpointStore, ExecutionId, FileStore, ListFilter};
use caf_tests::{dir_entries, json_file_ids};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many times the writer is killed.
const KILLS: usize = 60;
/// The execution that every other writer resumes (the others start a new one each).
const RESUMED: &str = "exec_kill_resumed";
const SIGKILL: i32 = 9;

/// Opens the store and checks it: no problems, listing = files on disk, sizes agree.
fn check_store(dir: &Path, when: &str) -> CheckpointManager<FileStore> {
    let store = FileStore::open(dir).unwrap_or_else(|e| panic!("{when}: open failed: {e}"));
    let problems: Vec<String> = store
        .problems()
        .iter()
        .map(|p| format!("{}: {}", p.path.display(), p.error))
        .collect();
    assert!(problems.is_empty(), "{when}: problems {problems:#?}");
    let listed = store.list(&ListFilter::default()).unwrap();
    let listed_ids: BTreeSet<String> = listed.iter().map(|s| s.id.to_string()).collect();
    assert_eq!(listed.len(), listed_ids.len(), "{when}: duplicate listing");
    assert_eq!(
        listed_ids,
        json_file_ids(dir),
        "{when}: the listing and the files differ"
    );
    for s in &listed {
        let len = std::fs::metadata(store.path_of(&s.id)).unwrap().len();
        assert_eq!(s.bytes, len, "{when}: size of {}", s.id);
    }
    CheckpointManager::new(store)
}

#[test]
fn killed_writers_leave_only_whole_valid_checkpoints() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_caf-kill-writer");
    let mut rng = fastrand::Rng::new();
    eprintln!("kill test seed: {}", rng.get_seed());
    let resumed = ExecutionId::new(RESUMED).unwrap();
    let mut last_step = 0u64;
    let mut resumed_runs_that_saved = 0;

    for run in 0..KILLS {
        let resume = run % 2 == 0;
        let mut cmd = Command::new(exe);
        cmd.arg(dir.path());
        if resume {
            cmd.arg(RESUMED);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Most runs are killed while saving (the delay starts once the writer is ready); every
        // fourth is killed from spawn, which may be during start-up (open, reconcile, restore).
        if run % 4 != 3 {
            let mut line = String::new();
            let mut stdout = BufReader::new(child.stdout.take().unwrap());
            let _ = stdout.read_line(&mut line);
            if !line.starts_with("ready ") {
                let _ = child.kill();
                let status = child.wait().unwrap();
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("run {run}: the writer did not start ({status}): {err}");
            }
        }
        std::thread::sleep(Duration::from_millis(rng.u64(5..=60)));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        if status.signal() != Some(SIGKILL) {
            let mut err = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut err);
            panic!("run {run}: the writer stopped on its own ({status}): {err}");
        }

        let when = format!("after kill {run}");
        let manager = check_store(dir.path(), &when);
        if resume {
            match manager.restore_latest(&resumed) {
                Ok(r) => {
                    assert!(r.skipped.is_empty(), "{when}: skipped {:?}", r.skipped);
                    let step = r.checkpoint.metadata.step_number;
                    assert!(
                        step >= last_step,
                        "{when}: step went back from {last_step} to {step}"
                    );
                    if step > last_step {
                        resumed_runs_that_saved += 1;
                    }
                    // The chain of steps is unbroken across kills: the state holds one
                    // thought per step ever taken.
                    assert_eq!(r.checkpoint.thought_count() as u64, step, "{when}");
                    last_step = step;
                }
                Err(caf_core::Error::NotFound { .. }) if last_step == 0 => {}
                Err(e) => panic!("{when}: restore_latest failed: {e}"),
            }
        }
    }

    // Every file decodes on its own: JSON, schema, checksum, and the name matches the id.
    let files = json_file_ids(dir.path());
    for id in &files {
        let path = dir.path().join(format!("{id}.json"));
        let bytes = std::fs::read(&path).unwrap();
        let d = decode(&bytes, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(d.checkpoint.id.as_str(), id);
    }
    // Nothing else was left in the directory (temporary files live under .caf/).
    let stray: Vec<String> = dir_entries(dir.path())
        .into_iter()
        .filter(|n| n != ".caf" && !n.ends_with(".json"))
        .collect();
    assert!(stray.is_empty(), "stray files: {stray:?}");

    let manager = check_store(dir.path(), "at the end");
    let listed = manager.store().list(&ListFilter::default()).unwrap();
    let executions: BTreeSet<ExecutionId> = listed.iter().map(|s| s.execution_id.clone()).collect();
    for e in &executions {
        let r = manager
            .restore_latest(e)
            .unwrap_or_else(|err| panic!("restore_latest({e}): {err}"));
        assert!(r.skipped.is_empty(), "{e}: skipped {:?}", r.skipped);
        let newest = &manager.store().list(&ListFilter::execution(e)).unwrap()[0];
        assert_eq!(r.checkpoint.id, newest.id);
    }
    eprintln!(
        "{KILLS} kills: {} files, {} executions, resumed execution at step {last_step} \
         ({resumed_runs_that_saved} resumed runs saved), {:?}",
        files.len(),
        executions.len(),
        started.elapsed()
    );
    assert!(
        resumed_runs_that_saved >= KILLS / 6,
        "too few runs got to save anything ({resumed_runs_that_saved}); the test proves little"
    );
    assert!(executions.contains(&resumed));
}
