//! `caf bench --concurrent N`: N processes save into one store at the same time.
//!
//! The parent creates the store in a scratch directory, then starts N copies of this binary as
//! workers (`caf bench --worker W --worker-dir DIR`, hidden options). Each worker opens the
//! store, says it is ready, waits for the word to go, then runs the agent-run workload on an
//! execution of its own for K steps, saving after each one, and reports on its stdout: how many
//! saves returned, and every error counted by its message (a failed save is not retried). The
//! parent starts the clock when it gives the word and stops it when the last worker has
//! reported: saves per second are the saves that returned over that time. Then it opens the
//! store again and counts what each execution holds: a save that returned but is missing is
//! *lost*.
//!
//! LangGraph's peer (`langgraph_agent_run.py --concurrent N --saves K`) runs the same way: N
//! processes started together, one SQLite file, errors counted and not retried.

use super::floor::FloorKind;
use super::peer::PeerRun;
use super::workload::{mode_dir, open_store, sql_failure, step, store_of, NullStore};
use super::Mode;
use crate::Failure;
use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, ExecutionId, ListFilter, RuntimeState,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// The agent name of worker `w`: its execution is found by it afterwards.
fn agent_name(w: u32) -> String {
    format!("concurrent-agent-{w}")
}

/// What one worker reports on its stdout, as one line of JSON.
#[derive(Debug, Serialize, Deserialize)]
struct WorkerReport {
    execution_id: String,
    saved: u32,
    /// Each error's message, and how many saves failed with it.
    errors: BTreeMap<String, u32>,
    /// The CPU time the worker's process spent (all its threads, user and system) from the
    /// word to go until its store was closed, every save written.
    cpu_s: f64,
}

/// The CPU time this process has spent so far, all its threads, user and system, in seconds.
pub(super) fn process_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// The figures of one mode under N concurrent writers.
#[derive(Debug, Serialize)]
pub(super) struct ConcurrentFigures {
    pub(super) mode: Mode,
    pub(super) processes: u32,
    pub(super) saves_each: u32,
    /// From the word to go until the last worker reported.
    pub(super) seconds: f64,
    pub(super) saves_per_s: f64,
    /// Saves that returned.
    pub(super) saved: u32,
    /// Checkpoints the store holds afterwards.
    pub(super) found: u32,
    /// Saves that returned but are not in the store.
    pub(super) lost: u32,
    pub(super) errors: u32,
    pub(super) error_kinds: BTreeMap<String, u32>,
    /// Workers that exited with a failure status.
    pub(super) workers_crashed: u32,
    /// The CPU time the workers spent per save that returned (all their threads, user and
    /// system), in microseconds: on a machine with C cores, about C / this is the most saves
    /// per second the mode can reach there. Not counted: the kernel's own writeback threads,
    /// and a database server's CPU (PostgreSQL).
    pub(super) cpu_us_per_save: f64,
}

/// Runs `processes` workers of `saves` saves each on `mode`, in a scratch directory under
/// `scratch`.
pub(super) fn measure(
    mode: Mode,
    processes: u32,
    saves: u32,
    scratch: &Path,
    pg: Option<&str>,
) -> Result<ConcurrentFigures, Failure> {
    let tmp = mode_dir(scratch)?;
    // Create the store (and its database, migrated) before the workers open it.
    drop(open_store(mode, tmp.as_path(), pg)?);
    let exe = std::env::current_exe()
        .map_err(|e| Failure::msg(format!("bench: cannot find this program: {e}")))?;
    let mut workers = Vec::new();
    for w in 0..processes {
        let mut cmd = Command::new(&exe);
        if let Some(url) = pg {
            cmd.args(["--db", url]);
        }
        let mut child = cmd
            .arg("bench")
            .args(["--mode", &super::mode_name(mode)])
            .args(["--saves", &saves.to_string()])
            .args(["--worker", &w.to_string()])
            .arg("--worker-dir")
            .arg(tmp.as_path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Failure::msg(format!("{}: {e}", exe.display())))?;
        let stdout = child.stdout.take().map(BufReader::new);
        workers.push((child, stdout));
    }
    // Every worker is ready (its store open) before the clock starts.
    let mut all_ready = true;
    for (_, out) in &mut workers {
        let mut line = String::new();
        all_ready &= out
            .as_mut()
            .is_some_and(|o| o.read_line(&mut line).is_ok() && line.trim() == "ready");
    }
    if !all_ready {
        kill_all(&mut workers);
        return Err(Failure::msg("bench: a concurrent worker failed to start"));
    }
    let t0 = Instant::now();
    for (child, _) in &mut workers {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(b"go\n");
        }
    }
    let mut reports = Vec::new();
    let mut crashed = 0;
    for (child, out) in &mut workers {
        let mut text = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut text);
        }
        let ok = child.wait().is_ok_and(|s| s.success());
        match serde_json::from_str::<WorkerReport>(text.trim()) {
            Ok(r) if ok => reports.push(r),
            _ => crashed += 1,
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let (files_or_null, db, _) = open_store(mode, tmp.as_path(), pg)?;
    let store = store_of(files_or_null.as_ref(), db.as_ref());
    let (mut saved, mut found, mut lost, mut cpu_s) = (0, 0, 0, 0.0);
    let mut error_kinds = BTreeMap::new();
    for r in &reports {
        saved += r.saved;
        cpu_s += r.cpu_s;
        let id: ExecutionId = r
            .execution_id
            .parse()
            .map_err(|e| Failure::msg(format!("bench: a worker reported a bad id: {e}")))?;
        let n = store.list(&ListFilter::execution(&id))?.len() as u32;
        found += n;
        lost += r.saved.saturating_sub(n);
        for (k, n) in &r.errors {
            *error_kinds.entry(k.clone()).or_insert(0) += n;
        }
    }
    Ok(ConcurrentFigures {
        mode,
        processes,
        saves_each: saves,
        seconds: (seconds * 1000.0).round() / 1000.0,
        saves_per_s: (f64::from(saved) / seconds.max(1e-9) * 10.0).round() / 10.0,
        saved,
        found,
        lost,
        errors: error_kinds.values().sum(),
        error_kinds,
        workers_crashed: crashed,
        cpu_us_per_save: (cpu_s * 1e6 / f64::from(saved.max(1))).round(),
    })
}

fn kill_all(workers: &mut [(Child, Option<BufReader<std::process::ChildStdout>>)]) {
    for (child, _) in workers {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// A worker: opens the store in `dir`, says `ready`, waits for `go` on stdin, saves `saves`
/// checkpoints of its own execution and prints its report.
pub(super) fn work(
    mode: Mode,
    worker: u32,
    saves: u32,
    dir: &Path,
    pg: Option<&str>,
) -> Result<(), Failure> {
    let (files_or_null, db, _) = open_store(mode, dir, pg)?;
    let store = store_of(files_or_null.as_ref(), db.as_ref());
    let maker = CheckpointManager::new(NullStore);
    let mut state = RuntimeState::new(agent_name(worker));
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| Failure::msg(format!("bench worker {worker}: {e}"));
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .map_err(io)?;
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).map_err(io)?;
    if go.trim() != "go" {
        // The parent gave up (its stdin end closed): save nothing.
        return Err(Failure::msg(format!(
            "bench worker {worker}: no word to go"
        )));
    }
    let cpu_at_go = process_cpu_s();
    let (mut saved, mut errors) = (0, BTreeMap::new());
    for s in 1..=saves as usize {
        step(&mut state, s)?;
        let c = maker.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        )?;
        match store.save(&c) {
            Ok(_) => saved += 1,
            Err(e) => *errors.entry(e.to_string()).or_insert(0) += 1,
        }
    }
    drop(files_or_null);
    drop(db);
    let report = WorkerReport {
        execution_id: state.execution_id().to_string(),
        saved,
        errors,
        cpu_s: process_cpu_s() - cpu_at_go,
    };
    let line = serde_json::to_string(&report).map_err(sql_failure)?;
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(io)
}

/// The physical floor under the same load: `processes` writers each append one execution's
/// checkpoints (as caf encodes them) to a preallocated file of its own, one `fdatasync` each, all
/// at once (see [`super::floor::concurrent_appends`]): what saves that each write their bytes
/// once and flush them alone cost the disk (saves sharing one flush, as SQLite's group commit
/// lets them, can go faster). With `with_files`, each writer also writes every checkpoint to a
/// new file of its own in one shared directory (create, write, rename, no flush): the floor of a
/// mode that keeps a file per checkpoint; with `with_checksums` too, it first computes each file's
/// SHA-256, as the format requires: the floor of any store of this format's files. The ratio of
/// a mode's saves per second to these shows what is left.
#[derive(Debug, Serialize)]
pub(super) struct ConcurrentFloor {
    pub(super) processes: u32,
    pub(super) saves_each: u32,
    /// Which floor: the JSON says it as `with_files` and `with_checksums`.
    #[serde(flatten)]
    pub(super) kind: FloorKind,
    pub(super) seconds: f64,
    pub(super) saves_per_s: f64,
    /// The CPU time of the appends and flushes (and files, and checksums) per checkpoint, in
    /// microseconds.
    pub(super) cpu_us_per_save: f64,
}

/// The file bytes of the `saves` checkpoints of one execution of the workload, in order.
pub(super) fn floor_checkpoints(saves: u32) -> Result<Vec<Vec<u8>>, Failure> {
    let maker = CheckpointManager::new(NullStore);
    let mut state = RuntimeState::new(agent_name(0));
    let mut checkpoints = Vec::new();
    for s in 1..=saves as usize {
        step(&mut state, s)?;
        let c = maker.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        )?;
        checkpoints.push(caf_core::format::encode(&c).map_err(sql_failure)?);
    }
    Ok(checkpoints)
}

/// Measures [`ConcurrentFloor`] for `checkpoints` ([`floor_checkpoints`]) in a scratch directory
/// under `scratch`.
pub(super) fn measure_floor(
    processes: u32,
    checkpoints: &[Vec<u8>],
    kind: FloorKind,
    scratch: &Path,
) -> Result<ConcurrentFloor, Failure> {
    // Kept, as the modes' directories are, until the run is over.
    let dir = mode_dir(scratch)?;
    let (seconds, cpu_s) = super::floor::concurrent_appends(&dir, processes, checkpoints, kind)?;
    let saves = u32::try_from(checkpoints.len()).unwrap_or(u32::MAX);
    let appended = f64::from(processes) * f64::from(saves);
    Ok(ConcurrentFloor {
        processes,
        saves_each: saves,
        kind,
        seconds: (seconds * 1000.0).round() / 1000.0,
        saves_per_s: (appended / seconds.max(1e-9) * 10.0).round() / 10.0,
        cpu_us_per_save: (cpu_s * 1e6 / appended.max(1.0)).round(),
    })
}

/// caf's saves per second over the peer's, per mode: above 1, caf saves more.
#[derive(Debug, Serialize)]
pub(super) struct ConcurrentRatio {
    mode: Mode,
    pub(super) saves_per_s: f64,
}

/// The saves per second a peer's `--concurrent` report states (0 if it states none).
pub(super) fn peer_saves_per_s(peer: &serde_json::Value) -> f64 {
    peer["saves_per_s"].as_f64().unwrap_or(0.0)
}

/// `caf bench --concurrent N --json`: each mode's figures, the floor, and with `--peer` the
/// peer's figures and the ratios.
#[derive(Serialize)]
pub(super) struct ConcurrentReport<'a> {
    pub(super) caf: &'a [ConcurrentFigures],
    /// The floor of appends alone; `null` when it could not be measured (the bench says why).
    pub(super) floor: Option<&'a ConcurrentFloor>,
    /// The floor of appends and a file per checkpoint; `null` likewise.
    pub(super) floor_with_files: Option<&'a ConcurrentFloor>,
    /// The floor of appends and a checksummed file per checkpoint; `null` likewise.
    pub(super) floor_with_checksums: Option<&'a ConcurrentFloor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) peer: Option<&'a serde_json::Value>,
    /// caf's saves per second over the peer's: above 1, caf saves more per second.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) ratios: Vec<ConcurrentRatio>,
}

impl<'a> ConcurrentReport<'a> {
    pub(super) fn new(
        caf: &'a [ConcurrentFigures],
        floors: [Option<&'a ConcurrentFloor>; 3],
        peer: Option<&'a serde_json::Value>,
    ) -> Self {
        let ratios = peer.map_or_else(Vec::new, |peer| {
            let peer_rate = peer_saves_per_s(peer);
            caf.iter()
                .map(|f| ConcurrentRatio {
                    mode: f.mode,
                    saves_per_s: super::peer::ratio(f.saves_per_s, peer_rate),
                })
                .collect()
        });
        Self {
            caf,
            floor: floors[0],
            floor_with_files: floors[1],
            floor_with_checksums: floors[2],
            peer,
            ratios,
        }
    }
}

/// Runs the peer's concurrent workload.
pub(super) fn run_peer(
    peer: &PeerRun,
    processes: u32,
    saves: u32,
    scratch: &Path,
) -> Result<serde_json::Value, Failure> {
    peer.run_with(
        &[
            "--concurrent".into(),
            processes.to_string(),
            "--saves".into(),
            saves.to_string(),
        ],
        scratch,
    )
}
