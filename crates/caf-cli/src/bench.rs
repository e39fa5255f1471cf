//! `caf bench`: the "agent-run" workload of DESIGN.md, measured per storage mode.
//!
//! E executions x S steps. Each step appends a thought (400 bytes) and a completed tool call
//! (args with an 80-byte query, a 600-byte result), sets three variables and saves a full
//! checkpoint. Then the latest checkpoint of every execution is loaded and every execution's
//! checkpoints are listed. Figures are medians in microseconds per operation (means and p95 are
//! in the JSON too). The floor is a plain durable atomic write (temp file, fsync, rename, fsync of
//! the directory) of the same bytes, measured right after each save in the same run; the append
//! floor, the physical one, is an append of the same bytes into a preallocated file and one
//! `fdatasync` (what a SQLite commit in WAL mode with `synchronous = FULL` costs). Disk is
//! the bytes the store left in its scratch directory; for PostgreSQL, the size of its tables
//! (with indexes) on the server. A debug build says on stderr that its figures are not
//! representative.
//!
//! `--peer langgraph` then runs the same workload through LangGraph's SqliteSaver
//! (`bench/peers/langgraph_agent_run.py`, in the venv `bench/peers/setup.sh` makes) in the same
//! run, and prints both side by side with the ratios caf / peer per operation.

use crate::cli::BenchArgs;
use crate::output::{self, Table};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::format::encode;
use caf_core::store::{write_atomic, AsyncStore, AtomicWriteOptions};
use caf_core::{
    Checkpoint, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore,
    CheckpointSummary, FileStore, ListFilter, RuntimeState,
};
use caf_sql::{HybridStore, SqlStore};
use serde::Serialize;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// A storage mode to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
pub enum Mode {
    /// JSON files only (FileStore).
    #[value(name = "files")]
    #[serde(rename = "files")]
    Files,
    /// Files plus an embedded SQLite index, kept in sync on every save: the default durable mode.
    #[value(name = "files+sqlite")]
    #[serde(rename = "files+sqlite")]
    FilesSqlite,
    /// SQLite only.
    #[value(name = "sqlite")]
    #[serde(rename = "sqlite")]
    Sqlite,
    /// PostgreSQL only (needs --db postgres://…; a scratch database is created and dropped).
    #[value(name = "postgres")]
    #[serde(rename = "postgres")]
    Postgres,
}

/// When a save of the store under test returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// On disk when `save` returns (the default).
    Sync,
    /// `save` returns once the checkpoint is encoded; a background writer writes it, in order
    /// (`caf_core::store::AsyncStore`). Files modes only.
    Async,
}

/// The figures of one mode.
#[derive(Debug, Serialize)]
pub struct Figures {
    mode: Mode,
    durability: Durability,
    /// Async: waiting, after the last save, until the writer has written everything (µs).
    #[serde(skip_serializing_if = "Option::is_none")]
    drain_us: Option<f64>,
    executions: u32,
    steps: u32,
    statistic: &'static str,
    save_us: f64,
    restore_us: f64,
    list_us: f64,
    floor_us: f64,
    /// One `fdatasync` of an append of the same bytes into a preallocated file, median.
    append_floor_us: f64,
    disk_bytes: u64,
    save_mean_us: f64,
    save_p95_us: f64,
    floor_mean_us: f64,
    append_floor_mean_us: f64,
    restore_mean_us: f64,
    list_mean_us: f64,
    checkpoint_bytes_last: u64,
    /// The database part of a save alone (no file serialization), median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_us: Option<f64>,
    /// The database part of save #10 of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_at_10_us: Option<f64>,
    /// The database part of the last save of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_at_last_us: Option<f64>,
    /// What storing every checkpoint whole would take (the sum of their encodings).
    whole_bytes: u64,
    /// Every append-floor measurement, for the peer's save/floor.
    #[serde(skip)]
    append_floor_samples: Vec<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    quantile(v, 0.5)
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn micros(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// A figure in microseconds, to the nanosecond: `3547.608`, not `3547.6079999999997`.
fn rounded(us: f64) -> f64 {
    (us * 1000.0).round() / 1000.0
}

/// The physical floor of a durable save: the checkpoint's bytes appended to a file whose blocks
/// are already written and flushed (so that `fdatasync` has no metadata to write), then one
/// `fdatasync` — SQLite's WAL with `synchronous = FULL` pays that per commit. Like a WAL, the
/// file is reused from its start when an append would not fit.
struct AppendFloor {
    file: std::fs::File,
    path: PathBuf,
    len: u64,
    at: u64,
}

impl AppendFloor {
    /// At least this much is preallocated (SQLite's WAL restarts after about 4 MB).
    const MIN: u64 = 16 << 20;

    fn open(path: PathBuf) -> Result<Self, Failure> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Failure::msg(format!("{}: {e}", path.display())))?;
        let mut floor = Self {
            file,
            path,
            len: 0,
            at: 0,
        };
        floor.grow(Self::MIN)?;
        Ok(floor)
    }

    fn fail(&self, e: std::io::Error) -> Failure {
        Failure::msg(format!("{}: {e}", self.path.display()))
    }

    /// Writes zeros up to `len` bytes and flushes them (not timed).
    fn grow(&mut self, len: u64) -> Result<(), Failure> {
        let zeros = vec![0u8; 1 << 20];
        self.file
            .seek(SeekFrom::Start(self.len))
            .map_err(|e| self.fail(e))?;
        while self.len < len {
            let n = (len - self.len).min(zeros.len() as u64) as usize;
            self.file.write_all(&zeros[..n]).map_err(|e| self.fail(e))?;
            self.len += n as u64;
        }
        self.file.sync_all().map_err(|e| self.fail(e))
    }

    /// Appends `bytes` and flushes them: the microseconds that took.
    fn append(&mut self, bytes: &[u8]) -> Result<f64, Failure> {
        let n = bytes.len() as u64;
        if n > self.len {
            self.grow(n.next_power_of_two().max(Self::MIN))?;
        }
        if self.at + n > self.len {
            self.at = 0;
        }
        let t = Instant::now();
        self.file
            .seek(SeekFrom::Start(self.at))
            .and_then(|_| self.file.write_all(bytes))
            .and_then(|()| self.file.sync_data())
            .map_err(|e| self.fail(e))?;
        let us = micros(t);
        self.at += n;
        Ok(us)
    }
}

/// One step of the workload on `state`.
fn step(state: &mut RuntimeState, s: usize) -> Result<(), Failure> {
    caf_core::workload::agent_run_step(state, s).map_err(Failure::msg)
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(ft) if ft.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// A store that keeps nothing: the bench builds checkpoints with a manager over it, then
/// times the store under test itself.
struct NullStore;

impl CheckpointStore for NullStore {
    fn save(&self, c: &Checkpoint) -> caf_core::Result<CheckpointSummary> {
        Ok(CheckpointSummary::of(c, 0))
    }
    fn load(&self, id: &caf_core::CheckpointId) -> caf_core::Result<Checkpoint> {
        Err(caf_core::Error::not_found(id))
    }
    fn list(&self, _: &ListFilter) -> caf_core::Result<Vec<CheckpointSummary>> {
        Ok(Vec::new())
    }
    fn delete(&self, _: &caf_core::CheckpointId) -> caf_core::Result<bool> {
        Ok(false)
    }
    fn delete_execution(&self, _: &caf_core::ExecutionId) -> caf_core::Result<usize> {
        Ok(0)
    }
}

fn sql_failure(e: impl std::fmt::Display) -> Failure {
    Failure::msg(format!("bench: {e}"))
}

/// The store under test, and its database when it has one.
fn open_store(
    mode: Mode,
    dir: &Path,
    pg: Option<&str>,
) -> Result<(Box<dyn CheckpointStore>, Option<SqlStore>), Failure> {
    let sqlite = || {
        SqlStore::open(&format!("sqlite://{}", dir.join("bench.db").display())).map_err(sql_failure)
    };
    Ok(match mode {
        Mode::Files => (Box::new(FileStore::open(dir.join("store"))?), None),
        Mode::FilesSqlite => (
            Box::new(HybridStore::new(
                FileStore::open(dir.join("store"))?,
                sqlite()?,
            )?),
            None,
        ),
        Mode::Sqlite => (Box::new(NullStore), Some(sqlite()?)),
        Mode::Postgres => {
            let url =
                pg.ok_or_else(|| Failure::Usage("--mode postgres needs --db postgres://…".into()))?;
            (
                Box::new(NullStore),
                Some(SqlStore::open(url).map_err(sql_failure)?),
            )
        }
    })
}

fn measure(
    mode: Mode,
    durability: Durability,
    scratch: &Path,
    executions: u32,
    steps: u32,
    pg: Option<&str>,
) -> Result<Figures, Failure> {
    let tmp = tempfile::Builder::new()
        .prefix(".caf-bench-")
        .tempdir_in(scratch)
        .map_err(|e| Failure::msg(format!("{}: {e}", scratch.display())))?;
    let floor_dir = tmp.path().join("floor");
    std::fs::create_dir_all(&floor_dir)
        .map_err(|e| Failure::msg(format!("{}: {e}", floor_dir.display())))?;
    let (files_or_null, db) = open_store(mode, tmp.path(), pg)?;
    let files_or_null: Box<dyn CheckpointStore> = match durability {
        Durability::Sync => files_or_null,
        Durability::Async => Box::new(AsyncStore::new(files_or_null)),
    };
    // The store that is read back: the database alone in the SQL modes.
    let store: &dyn CheckpointStore = match &db {
        Some(db) => db,
        None => files_or_null.as_ref(),
    };
    let maker = CheckpointManager::new(NullStore);
    let mut append_floor = AppendFloor::open(floor_dir.join("append.bin"))?;
    let (mut save, mut floor, mut sync) = (Vec::new(), Vec::new(), Vec::new());
    let mut append = Vec::new();
    let (mut sync_10, mut sync_last) = (Vec::new(), Vec::new());
    let mut execs = Vec::new();
    let (mut last_bytes, mut whole) = (0, 0);
    for e in 0..executions {
        let mut state = RuntimeState::new(format!("bench-agent-{e}"));
        execs.push(state.execution_id().clone());
        for s in 1..=steps as usize {
            step(&mut state, s)?;
            let c = maker.checkpoint(
                &mut state,
                CheckpointOptions::new(CheckpointReason::StepCompleted),
            )?;
            let t = Instant::now();
            let bytes = match &db {
                None => {
                    store.save(&c)?;
                    save.push(micros(t));
                    encode(&c).map_err(|e| Failure::msg(e.to_string()))?
                }
                Some(db) => {
                    let bytes = encode(&c).map_err(|e| Failure::msg(e.to_string()))?;
                    let t_sync = Instant::now();
                    db.sync_encoded(&c, &bytes).map_err(sql_failure)?;
                    let us = micros(t_sync);
                    save.push(micros(t));
                    sync.push(us);
                    if s == 10 {
                        sync_10.push(us);
                    }
                    if s == steps as usize {
                        sync_last.push(us);
                    }
                    bytes
                }
            };
            last_bytes = bytes.len() as u64;
            whole += last_bytes;
            let target = floor_dir.join(format!("{}.json", c.id));
            let t = Instant::now();
            write_atomic(&target, None, &bytes, AtomicWriteOptions::default())?;
            floor.push(micros(t));
            append.push(append_floor.append(&bytes)?);
        }
    }
    // Async: what is still queued is written before anything is read (reads wait for it).
    let drain_us = (durability == Durability::Async).then(|| {
        let t = Instant::now();
        let _ = store.list(&ListFilter::execution(&execs[0]));
        rounded(micros(t))
    });
    let (mut restore, mut list) = (Vec::new(), Vec::new());
    for e in &execs {
        let t = Instant::now();
        let latest = store.latest(e)?;
        restore.push(micros(t));
        if latest.is_none() {
            return Err(Failure::msg(format!(
                "bench: execution {e} has no latest checkpoint"
            )));
        }
        let t = Instant::now();
        let items = store.list(&ListFilter::execution(e))?;
        list.push(micros(t));
        if items.len() != steps as usize {
            return Err(Failure::msg(format!(
                "bench: listed {} of {steps} checkpoints",
                items.len()
            )));
        }
    }
    let sql_mode = db.is_some();
    // PostgreSQL keeps its data on the server: ask it what the tables take.
    let server_bytes = match (&db, mode) {
        (Some(db), Mode::Postgres) => Some(db.database_bytes().map_err(sql_failure)?),
        _ => None,
    };
    drop(files_or_null);
    drop(db);
    drop(append_floor);
    let disk_bytes =
        server_bytes.unwrap_or_else(|| dir_bytes(tmp.path()).saturating_sub(dir_bytes(&floor_dir)));
    let opt = |v: &mut Vec<f64>| (!v.is_empty()).then(|| rounded(median(v)));
    Ok(Figures {
        mode,
        durability,
        drain_us,
        executions,
        steps,
        statistic: "median",
        save_mean_us: rounded(mean(&save)),
        floor_mean_us: rounded(mean(&floor)),
        append_floor_mean_us: rounded(mean(&append)),
        restore_mean_us: rounded(mean(&restore)),
        list_mean_us: rounded(mean(&list)),
        save_p95_us: rounded(quantile(&mut save, 0.95)),
        save_us: rounded(median(&mut save)),
        restore_us: rounded(median(&mut restore)),
        list_us: rounded(median(&mut list)),
        floor_us: rounded(median(&mut floor)),
        append_floor_us: rounded(median(&mut append)),
        disk_bytes,
        checkpoint_bytes_last: last_bytes,
        sync_us: if sql_mode { opt(&mut sync) } else { None },
        sync_at_10_us: opt(&mut sync_10),
        sync_at_last_us: opt(&mut sync_last),
        whole_bytes: whole,
        append_floor_samples: append,
    })
}

/// The mode's name, and `async` for the async durability.
fn label(f: &Figures) -> String {
    match f.durability {
        Durability::Sync => mode_name(f.mode),
        Durability::Async => format!("{} async", mode_name(f.mode)),
    }
}

/// The mode's name as the command line spells it.
fn mode_name(m: Mode) -> String {
    clap::ValueEnum::to_possible_value(&m)
        .map_or_else(|| format!("{m:?}"), |v| v.get_name().to_string())
}

/// Runs the benchmark and prints the figures.
pub fn run(t: &Target, json: bool, a: &BenchArgs) -> CmdResult {
    let scratch: PathBuf = match &a.scratch {
        Some(p) => p.clone(),
        None => t
            .dir()
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let mut modes: Vec<Mode> = Vec::new();
    for m in &a.mode {
        if !modes.contains(m) {
            modes.push(*m);
        }
    }
    if modes.is_empty() {
        modes = match a.peer {
            Some(_) => vec![Mode::Files, Mode::FilesSqlite, Mode::Sqlite],
            None => vec![Mode::Files],
        };
    }
    if modes.contains(&Mode::Postgres)
        && !t.db.as_deref().is_some_and(|u| u.starts_with("postgres"))
    {
        return Err(Failure::Usage(
            "--mode postgres needs --db postgres://…".into(),
        ));
    }
    // Before anything is measured: a peer that is not set up fails at once.
    let peer = a.peer.map(PeerRun::find).transpose()?;
    if cfg!(debug_assertions) {
        output::warn_line(
            "this caf is a debug build: its figures are several times (about 9x) worse than an \
             optimized build's; measure with `cargo run --release -p caf-cli -- bench`",
        );
    }
    let mut all = Vec::new();
    for mode in modes {
        if !json {
            eprintln!(
                "measuring {}: {} x {} …",
                mode_name(mode),
                output::count(a.executions, "execution"),
                output::count(a.steps, "step")
            );
        }
        let pg = t.db.as_deref().filter(|u| u.starts_with("postgres"));
        all.push(match (mode, pg) {
            (Mode::Postgres, Some(url)) => {
                let scratch_db = caf_sql::ScratchDatabase::create(url).map_err(sql_failure)?;
                measure(
                    mode,
                    Durability::Sync,
                    &scratch,
                    a.executions,
                    a.steps,
                    Some(scratch_db.url()),
                )?
            }
            _ => measure(mode, Durability::Sync, &scratch, a.executions, a.steps, pg)?,
        });
        if a.durability.contains(&Durability::Async) {
            if !matches!(mode, Mode::Files | Mode::FilesSqlite) {
                output::warn_line(&format!(
                    "--durability async: {} is measured in sync mode only",
                    mode_name(mode)
                ));
                continue;
            }
            if !json {
                eprintln!("measuring {} (async) …", mode_name(mode));
            }
            all.push(measure(
                mode,
                Durability::Async,
                &scratch,
                a.executions,
                a.steps,
                pg,
            )?);
        }
    }
    let peer = match peer {
        Some(p) => {
            if !json {
                eprintln!(
                    "measuring {}: {} x {} …",
                    p.name(),
                    output::count(a.executions, "execution"),
                    output::count(a.steps, "step")
                );
            }
            Some(p.run(a.executions, a.steps, &scratch)?)
        }
        None => None,
    };
    if json {
        match &peer {
            Some(p) => output::print_json(&SideBySide::new(&all, p)),
            None => output::print_json(&all),
        }
        return Ok(());
    }
    let mut table = Table::new(&[
        "MODE",
        "SAVE µs",
        "FLOOR µs",
        "SAVE/FLOOR",
        "SYNC µs (#10 → last)",
        "RESTORE µs",
        "LIST µs",
        "DISK (WHOLE)",
    ]);
    for f in &all {
        let plain = Style::new();
        let sync = match (f.sync_us, f.sync_at_10_us, f.sync_at_last_us) {
            (Some(s), Some(a), Some(b)) => format!("{s:.0} ({a:.0} → {b:.0})"),
            (Some(s), _, _) => format!("{s:.0}"),
            _ => "-".into(),
        };
        table.row(vec![
            (label(f), plain),
            (format!("{:.0}", f.save_us), plain),
            (format!("{:.0}", f.floor_us), plain),
            (format!("{:.2}x", f.save_us / f.floor_us.max(1.0)), plain),
            (sync, plain),
            (format!("{:.0}", f.restore_us), plain),
            (format!("{:.0}", f.list_us), plain),
            (
                format!(
                    "{} ({})",
                    output::bytes(f.disk_bytes),
                    output::bytes(f.whole_bytes)
                ),
                plain,
            ),
        ]);
    }
    table.print();
    crate::say!("medians per operation; --json adds means and p95");
    for f in all.iter().filter(|f| f.durability == Durability::Async) {
        crate::say!(
            "{} async: a save returns once the checkpoint is encoded; the writer caught up {:.0} \
             µs after the last save",
            mode_name(f.mode),
            f.drain_us.unwrap_or_default()
        );
    }
    if let Some(p) = &peer {
        print_side_by_side(&SideBySide::new(&all, p));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// A peer, side by side
// ---------------------------------------------------------------------------------------------

/// Another checkpointer, run on the same workload in the same run (`--peer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Peer {
    /// LangGraph's SqliteSaver (langgraph-checkpoint-sqlite), through the venv that
    /// `bench/peers/setup.sh` creates.
    #[value(name = "langgraph")]
    Langgraph,
}

/// The directory of the peer harness: `$CAF_PEER_DIR`, else `bench/peers` of the source tree
/// this caf was built from.
fn peer_dir() -> PathBuf {
    std::env::var_os("CAF_PEER_DIR").map_or_else(
        || {
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir
                .parent()
                .and_then(Path::parent)
                .unwrap_or(crate_dir)
                .join("bench")
                .join("peers")
        },
        PathBuf::from,
    )
}

/// A peer's script and the interpreter of its venv.
struct PeerRun {
    peer: Peer,
    python: PathBuf,
    script: PathBuf,
}

impl PeerRun {
    /// The peer's venv and script, or the one-line error that says how to set them up.
    fn find(peer: Peer) -> Result<Self, Failure> {
        let dir = peer_dir();
        let venv = dir.join(".venv");
        let python = if cfg!(windows) {
            venv.join("Scripts").join("python.exe")
        } else {
            venv.join("bin").join("python")
        };
        let script = dir.join(match peer {
            Peer::Langgraph => "langgraph_agent_run.py",
        });
        if !python.is_file() {
            return Err(Failure::msg(format!(
                "the LangGraph peer is not set up (no {}): run bench/peers/setup.sh",
                python.display()
            )));
        }
        if !script.is_file() {
            return Err(Failure::msg(format!(
                "{}: the LangGraph peer's script is missing",
                script.display()
            )));
        }
        Ok(Self {
            peer,
            python,
            script,
        })
    }

    fn name(&self) -> &'static str {
        match self.peer {
            Peer::Langgraph => "langgraph (SqliteSaver)",
        }
    }

    /// Runs the peer on E x S, its database in a temporary directory under `scratch`.
    fn run(&self, executions: u32, steps: u32, scratch: &Path) -> Result<PeerFigures, Failure> {
        let out = Command::new(&self.python)
            .arg(&self.script)
            .args(["--executions", &executions.to_string()])
            .args(["--steps", &steps.to_string()])
            .arg("--scratch")
            .arg(scratch)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Failure::msg(format!("{}: {e}", self.python.display())))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no message");
            return Err(Failure::msg(format!(
                "the LangGraph peer failed ({}): {last}",
                out.status
            )));
        }
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            Failure::msg(format!("the LangGraph peer printed no JSON report ({e})"))
        })?;
        let us = |key: &str| {
            report[key]
                .as_f64()
                .ok_or_else(|| Failure::msg(format!("the LangGraph peer's report has no {key}")))
        };
        let text = |v: &serde_json::Value| v.as_str().unwrap_or("?").to_string();
        Ok(PeerFigures {
            save_us: us("save_us")?,
            restore_us: us("restore_us")?,
            list_us: us("list_us")?,
            version: text(&report["packages"]["langgraph-checkpoint-sqlite"]),
            sqlite: text(&report["sqlite"]["version"]),
            journal_mode: text(&report["sqlite"]["journal_mode"]),
            synchronous: text(&report["sqlite"]["synchronous"]),
            report,
        })
    }
}

/// What the peer reported, and the figures the comparison uses.
struct PeerFigures {
    save_us: f64,
    restore_us: f64,
    list_us: f64,
    /// langgraph-checkpoint-sqlite's version.
    version: String,
    sqlite: String,
    journal_mode: String,
    synchronous: String,
    /// The peer's JSON report, verbatim.
    report: serde_json::Value,
}

impl PeerFigures {
    /// Whether a save is on disk when it returns: SQLite with a journal, `synchronous` FULL or
    /// EXTRA.
    fn durable(&self) -> bool {
        !matches!(self.journal_mode.as_str(), "off" | "memory")
            && matches!(self.synchronous.as_str(), "FULL" | "EXTRA")
    }

    fn durability(&self) -> String {
        format!(
            "SQLite {} journal, synchronous={}",
            self.journal_mode.to_uppercase(),
            self.synchronous
        )
    }
}

/// Whether a save of `mode` is on disk when it returns, and how.
fn durability(mode: Mode) -> (bool, String) {
    // The modes open their database as `SqlStore::open` does: with the default options.
    let durability = caf_sql::SqlOptions::default().durability;
    let sqlite = match durability {
        caf_sql::Durability::Default | caf_sql::Durability::Full => "FULL",
        caf_sql::Durability::Relaxed => "NORMAL",
    };
    match mode {
        Mode::Files => (
            true,
            "file fdatasync, rename, directory fsync per save".into(),
        ),
        Mode::FilesSqlite => (
            true,
            format!(
                "one flush per save: the SQLite commit (WAL, synchronous={sqlite}); files renamed \
                 in place unflushed, synced in the background, rewritten from the database \
                 after a power loss"
            ),
        ),
        Mode::Sqlite => (
            sqlite == "FULL",
            format!("SQLite WAL journal, synchronous={sqlite}"),
        ),
        Mode::Postgres => match durability {
            caf_sql::Durability::Relaxed => (false, "synchronous_commit=off".into()),
            _ => (true, "synchronous_commit=on".into()),
        },
    }
}

/// caf / peer for one mode: below 1, caf is faster.
#[derive(Debug, Serialize)]
struct Ratio {
    mode: Mode,
    /// Whether this mode's save is on disk when it returns.
    durable: bool,
    durability: String,
    /// Whether the save ratio compares like with like (both durable, or both not).
    save_like_for_like: bool,
    save: f64,
    restore: f64,
    list: f64,
    /// This mode's save over its append floor.
    save_over_floor: f64,
}

/// `caf bench --peer … --json`.
#[derive(Serialize)]
struct SideBySide<'a> {
    caf: &'a [Figures],
    peer: &'a serde_json::Value,
    peer_durable: bool,
    peer_durability: String,
    /// The append floor over every save of every caf mode of this run, median.
    append_floor_us: f64,
    /// The peer's save over that floor.
    peer_save_over_floor: f64,
    /// caf / peer per operation and mode, medians: below 1, caf is faster.
    ratios: Vec<Ratio>,
    #[serde(skip)]
    figures: &'a PeerFigures,
}

/// `a / b`, to six decimals (the ratios of list times are small).
fn ratio(a: f64, b: f64) -> f64 {
    (a / b.max(0.001) * 1e6).round() / 1e6
}

impl<'a> SideBySide<'a> {
    fn new(caf: &'a [Figures], peer: &'a PeerFigures) -> Self {
        let mut pooled: Vec<f64> = caf
            .iter()
            .flat_map(|f| f.append_floor_samples.iter().copied())
            .collect();
        let floor = rounded(median(&mut pooled));
        let ratios = caf
            .iter()
            .map(|f| {
                let (durable, durability) = match f.durability {
                    Durability::Sync => durability(f.mode),
                    Durability::Async => (
                        false,
                        "async, a background writer writes each save in order".into(),
                    ),
                };
                Ratio {
                    mode: f.mode,
                    durable,
                    durability,
                    save_like_for_like: durable == peer.durable(),
                    save: ratio(f.save_us, peer.save_us),
                    restore: ratio(f.restore_us, peer.restore_us),
                    list: ratio(f.list_us, peer.list_us),
                    save_over_floor: ratio(f.save_us, f.append_floor_us),
                }
            })
            .collect();
        Self {
            caf,
            peer: &peer.report,
            peer_durable: peer.durable(),
            peer_durability: peer.durability(),
            append_floor_us: floor,
            peer_save_over_floor: ratio(peer.save_us, floor),
            ratios,
            figures: peer,
        }
    }
}

/// A factor with three significant digits or so: `2.31`, `31.3`, `105`.
fn factor(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// `2.31 (caf 2.31x slower)` / `0.0095 (caf 105x faster)`, for a ratio caf / peer.
fn verdict(r: f64) -> String {
    let shown = if r >= 0.1 {
        format!("{r:.2}")
    } else {
        format!("{r:.4}")
    };
    if r < 1.0 {
        format!("{shown} (caf {}x faster)", factor(1.0 / r.max(1e-6)))
    } else {
        format!("{shown} (caf {}x slower)", factor(r))
    }
}

fn yes_no(durable: bool) -> &'static str {
    if durable {
        "yes"
    } else {
        "no"
    }
}

fn print_side_by_side(s: &SideBySide<'_>) {
    let p = s.figures;
    let plain = Style::new();
    crate::say!();
    crate::say!(
        "side by side with LangGraph's SqliteSaver (langgraph-checkpoint-sqlite {}, SQLite {}), \
         same run, same workload:",
        p.version,
        p.sqlite
    );
    let mut table = Table::new(&[
        "STORE",
        "SAVE µs",
        "SAVE/FLOOR",
        "RESTORE µs",
        "LIST µs",
        "DURABLE WHEN SAVE RETURNS",
    ]);
    for (f, r) in s.caf.iter().zip(&s.ratios) {
        table.row(vec![
            (format!("caf {}", label(f)), plain),
            (format!("{:.0}", f.save_us), plain),
            (format!("{:.2}x", r.save_over_floor), plain),
            (format!("{:.0}", f.restore_us), plain),
            (format!("{:.0}", f.list_us), plain),
            (format!("{}: {}", yes_no(r.durable), r.durability), plain),
        ]);
    }
    table.row(vec![
        ("LangGraph SqliteSaver".into(), plain),
        (format!("{:.0}", p.save_us), plain),
        (format!("{:.2}x", s.peer_save_over_floor), plain),
        (format!("{:.0}", p.restore_us), plain),
        (format!("{:.0}", p.list_us), plain),
        (
            format!("{}: {}", yes_no(s.peer_durable), s.peer_durability),
            plain,
        ),
    ]);
    table.row(vec![
        ("floor".into(), plain),
        (format!("{:.0}", s.append_floor_us), plain),
        ("1.00x".into(), plain),
        ("-".into(), plain),
        ("-".into(), plain),
        (
            "append into a preallocated file + one fdatasync".into(),
            plain,
        ),
    ]);
    table.print();
    crate::say!();
    let mut ratios = Table::new(&["CAF / LANGGRAPH", "SAVE", "RESTORE-LATEST", "LIST"]);
    for (f, r) in s.caf.iter().zip(&s.ratios) {
        let mut save = verdict(r.save);
        if !r.save_like_for_like {
            save.push_str(" [not like for like]");
        }
        ratios.row(vec![
            (label(f), plain),
            (save, plain),
            (verdict(r.restore), plain),
            (verdict(r.list), plain),
        ]);
    }
    ratios.print();
    crate::say!(
        "medians per operation. caf / LangGraph is the time caf takes over the time LangGraph \
         takes: below 1, caf is faster."
    );
    crate::say!(
        "like with like: a save ratio compares saves that are both on disk when they return \
         (or both not); [not like for like] marks the others. Restore and list do not depend on \
         durability."
    );
    crate::say!(
        "LangGraph's SqliteSaver ran with journal_mode={} and synchronous={}, as read back \
         from its connection after its setup().",
        p.journal_mode,
        p.synchronous
    );
    crate::say!(
        "floor: the same bytes as each caf save, appended into a preallocated file and flushed \
         with one fdatasync, right after that save; SAVE/FLOOR divides by the floor of the same \
         mode (LangGraph's: of every mode)."
    );
    crate::say!(
        "list: LangGraph's list returns every checkpoint whole (deserialized), caf's returns \
         summaries: each API's way to list an execution."
    );
}
