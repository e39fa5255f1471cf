//! `caf bench`: the "agent-run" workload of DESIGN.md, measured per storage mode.
//!
//! E executions x S steps. Each step appends a thought (400 bytes) and a completed tool call
//! (args with an 80-byte query, a 600-byte result), sets three variables and saves a full
//! checkpoint. Then the latest checkpoint of every execution is loaded and every execution's
//! checkpoints are listed. Figures are medians in microseconds per operation (means and p95 are
//! in the JSON too). The floor is a plain durable atomic write (temp file, fsync, rename, fsync of
//! the directory) of the same bytes, measured right after each save in the same run. Disk is
//! the bytes the store left in its scratch directory; for PostgreSQL, the size of its tables
//! (with indexes) on the server. A debug build says on stderr that its figures are not
//! representative.

use crate::cli::BenchArgs;
use crate::output::{self, Table};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::format::encode;
use caf_core::store::{write_atomic, AtomicWriteOptions};
use caf_core::{
    Checkpoint, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore,
    CheckpointSummary, FileStore, ListFilter, RuntimeState,
};
use caf_sql::{HybridStore, SqlStore};
use serde::Serialize;
use std::path::{Path, PathBuf};
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

/// The figures of one mode.
#[derive(Debug, Serialize)]
pub struct Figures {
    mode: Mode,
    executions: u32,
    steps: u32,
    statistic: &'static str,
    save_us: f64,
    restore_us: f64,
    list_us: f64,
    floor_us: f64,
    disk_bytes: u64,
    save_mean_us: f64,
    save_p95_us: f64,
    floor_mean_us: f64,
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
            )),
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
    // The store that is read back: the database alone in the SQL modes.
    let store: &dyn CheckpointStore = match &db {
        Some(db) => db,
        None => files_or_null.as_ref(),
    };
    let maker = CheckpointManager::new(NullStore);
    let (mut save, mut floor, mut sync) = (Vec::new(), Vec::new(), Vec::new());
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
        }
    }
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
    let disk_bytes =
        server_bytes.unwrap_or_else(|| dir_bytes(tmp.path()).saturating_sub(dir_bytes(&floor_dir)));
    let opt = |v: &mut Vec<f64>| (!v.is_empty()).then(|| rounded(median(v)));
    Ok(Figures {
        mode,
        executions,
        steps,
        statistic: "median",
        save_mean_us: rounded(mean(&save)),
        floor_mean_us: rounded(mean(&floor)),
        restore_mean_us: rounded(mean(&restore)),
        list_mean_us: rounded(mean(&list)),
        save_p95_us: rounded(quantile(&mut save, 0.95)),
        save_us: rounded(median(&mut save)),
        restore_us: rounded(median(&mut restore)),
        list_us: rounded(median(&mut list)),
        floor_us: rounded(median(&mut floor)),
        disk_bytes,
        checkpoint_bytes_last: last_bytes,
        sync_us: if sql_mode { opt(&mut sync) } else { None },
        sync_at_10_us: opt(&mut sync_10),
        sync_at_last_us: opt(&mut sync_last),
        whole_bytes: whole,
    })
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
    if modes.contains(&Mode::Postgres)
        && !t.db.as_deref().is_some_and(|u| u.starts_with("postgres"))
    {
        return Err(Failure::Usage(
            "--mode postgres needs --db postgres://…".into(),
        ));
    }
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
                    &scratch,
                    a.executions,
                    a.steps,
                    Some(scratch_db.url()),
                )?
            }
            _ => measure(mode, &scratch, a.executions, a.steps, pg)?,
        });
    }
    if json {
        output::print_json(&all);
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
            (mode_name(f.mode), plain),
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
    Ok(())
}
