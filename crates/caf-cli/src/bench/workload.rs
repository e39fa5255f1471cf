//! The agent-run workload, measured on one storage mode.

use super::floor::AppendFloor;
use super::stats::{mean, median, median_of, micros, quantile, rounded};
use super::{Durability, Figures, Mode};
use crate::Failure;
use caf_core::format::{encode, Encoder};
use caf_core::store::{write_atomic, AsyncStore, AtomicWriteOptions};
use caf_core::{
    Checkpoint, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore,
    CheckpointSummary, FileStore, ListFilter, RuntimeState,
};
use caf_sql::{HybridStore, JournaledStore, SqlStore};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// One step of the workload on `state`.
pub(super) fn step(state: &mut RuntimeState, s: usize) -> Result<(), Failure> {
    caf_core::workload::agent_run_step(state, s).map_err(Failure::msg)
}

pub(super) fn dir_bytes(dir: &Path) -> u64 {
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
pub(super) struct NullStore;

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

pub(super) fn sql_failure(e: impl std::fmt::Display) -> Failure {
    Failure::msg(format!("bench: {e}"))
}

/// The store a mode saves into and reads back: the database in the SQL modes, else the files.
pub(super) fn store_of<'a>(
    files_or_null: &'a dyn CheckpointStore,
    db: Option<&'a SqlStore>,
) -> &'a dyn CheckpointStore {
    match db {
        Some(db) => db,
        None => files_or_null,
    }
}

/// A mode's store in `dir`: the store it saves into (files, or nothing in the SQL modes), its
/// database when it has one, and, in the default mode, the journaled store itself (the first,
/// shared), whose writer's rows the single-agent workload times.
pub(super) type Opened = (
    Box<dyn CheckpointStore>,
    Option<SqlStore>,
    Option<Arc<JournaledStore>>,
);

pub(super) fn open_store(mode: Mode, dir: &Path, pg: Option<&str>) -> Result<Opened, Failure> {
    let sqlite = || {
        SqlStore::open(&format!("sqlite://{}", dir.join("bench.db").display())).map_err(sql_failure)
    };
    Ok(match mode {
        Mode::Files => (Box::new(FileStore::open(dir.join("store"))?), None, None),
        // As an agent opens it: its saves journaled (`caf_sql::Location::open_journaled`).
        Mode::FilesSqlite => {
            let hybrid = HybridStore::new(FileStore::open(dir.join("store"))?, sqlite()?)?;
            let journaled = Arc::new(JournaledStore::open(hybrid)?);
            (Box::new(Arc::clone(&journaled)), None, Some(journaled))
        }
        Mode::Sqlite => (Box::new(NullStore), Some(sqlite()?), None),
        Mode::Postgres => {
            let url =
                pg.ok_or_else(|| Failure::Usage("--mode postgres needs --db postgres://…".into()))?;
            (
                Box::new(NullStore),
                Some(SqlStore::open(url).map_err(sql_failure)?),
                None,
            )
        }
    })
}

/// A directory of its own for one mode's store, under the run's `scratch` directory.
///
/// Kept until the whole run ends (`scratch` is the run's own directory, removed then): on ext4
/// without a journal every file created skips the inodes deleted in the last minute (six while
/// their inode table's block is not yet written back), so one mode's clean-up would slow the next
/// mode down.
pub(super) fn mode_dir(scratch: &Path) -> Result<PathBuf, Failure> {
    Ok(tempfile::Builder::new()
        .prefix("mode-")
        .tempdir_in(scratch)
        .map_err(|e| Failure::msg(format!("{}: {e}", scratch.display())))?
        .keep())
}

/// How the files modes save: in the caller's thread, or handed to a background writer.
enum Saving {
    Sync(Box<dyn CheckpointStore>),
    Async(AsyncStore<Box<dyn CheckpointStore>>),
}

pub(super) fn measure(
    mode: Mode,
    durability: Durability,
    scratch: &Path,
    executions: u32,
    steps: u32,
    pg: Option<&str>,
) -> Result<Figures, Failure> {
    let tmp = mode_dir(scratch)?;
    let floor_dir = tmp.as_path().join("floor");
    std::fs::create_dir_all(&floor_dir)
        .map_err(|e| Failure::msg(format!("{}: {e}", floor_dir.display())))?;
    let (files_or_null, db, journaled) = open_store(mode, tmp.as_path(), pg)?;
    let files_or_null = match durability {
        Durability::Sync => Saving::Sync(files_or_null),
        Durability::Async => Saving::Async(AsyncStore::new(files_or_null)),
    };
    // The store that is read back: the database alone in the SQL modes.
    let store: &dyn CheckpointStore = match (&db, &files_or_null) {
        (Some(db), _) => db,
        (None, Saving::Sync(s)) => s.as_ref(),
        (None, Saving::Async(s)) => s,
    };
    let maker = CheckpointManager::new(NullStore);
    let mut encoder = Encoder::default();
    let mut append_floor = AppendFloor::open(floor_dir.join("append.bin"))?;
    let mut page_floor = AppendFloor::open(floor_dir.join("page.bin"))?;
    let one_page = [0x5a_u8; 4096];
    let mut page = Vec::new();
    let (mut save, mut floor, mut sync) = (Vec::new(), Vec::new(), Vec::new());
    let mut append = Vec::new();
    let (mut sync_10, mut sync_last) = (Vec::new(), Vec::new());
    let (mut wait_last, mut checksum_last) = (Vec::new(), Vec::new());
    let (mut rows_10, mut rows_last) = (Vec::new(), Vec::new());
    let mut flushes = Vec::new();
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
            let id = c.id.clone();
            // The default mode's rows at save #10 and the last (sync: an async save reaches the
            // journaled store later): the writer is idle before the save (as it is after an
            // agent's step), so that save's rows are a transaction of their own, timed once
            // written (below).
            let rows_timed = journaled
                .as_ref()
                .filter(|_| durability == Durability::Sync && (s == 10 || s == steps as usize));
            if let Some(j) = rows_timed {
                j.settled_hybrid();
            }
            let t = Instant::now();
            let bytes = match &db {
                None => match &files_or_null {
                    Saving::Sync(s) => {
                        s.save(&c)?;
                        save.push(micros(t));
                        encode(&c).map_err(|e| Failure::msg(e.to_string()))?
                    }
                    Saving::Async(s) => {
                        // The floor's bytes first, untimed: the checkpoint is handed over.
                        let bytes = encode(&c).map_err(|e| Failure::msg(e.to_string()))?;
                        let t = Instant::now();
                        s.save_owned(c)?;
                        save.push(micros(t));
                        bytes
                    }
                },
                Some(db) => {
                    db.save_checkpoint(&c).map_err(sql_failure)?;
                    save.push(micros(t));
                    // The SQL work apart from the flush that makes it durable (SQLite's group
                    // commit flushes after the commit; PostgreSQL's commit waits for its own).
                    if let Some(f) = db.last_flush() {
                        flushes.push(f.as_secs_f64() * 1e6);
                    }
                    let us = db.last_write().as_secs_f64() * 1e6;
                    sync.push(us);
                    if s == 10 {
                        sync_10.push(us);
                    }
                    if s == steps as usize {
                        sync_last.push(us);
                        wait_last.push(db.last_checksum_wait().as_secs_f64() * 1e6);
                    }
                    // The floor's bytes, untimed: what the store encoded (splicing as it does).
                    let redacted = db.redactor().redact_for(&c, db);
                    encoder
                        .encode(&redacted.checkpoint)
                        .map_err(|e| Failure::msg(e.to_string()))?
                }
            };
            last_bytes = bytes.len() as u64;
            whole += last_bytes;
            if db.is_some() && s == steps as usize {
                // What the last save's SQL part may wait for: the SHA-256 of the document alone.
                let t = Instant::now();
                std::hint::black_box(caf_core::format::integrity::digest(&[&bytes]));
                checksum_last.push(micros(t));
            }
            let target = floor_dir.join(format!("{id}.json"));
            let t = Instant::now();
            write_atomic(&target, None, &bytes, AtomicWriteOptions::default())?;
            floor.push(micros(t));
            append.push(append_floor.append(&bytes)?);
            page.push(page_floor.append(&one_page)?);
            if let Some(j) = rows_timed {
                let us = j.settled_hybrid().sql().last_write().as_secs_f64() * 1e6;
                if s == 10 {
                    rows_10.push(us);
                }
                if s == steps as usize {
                    rows_last.push(us);
                }
            }
        }
    }
    // Async: what is still queued is written before anything is read.
    let drain_us = match &files_or_null {
        Saving::Async(s) => {
            let t = Instant::now();
            s.flush()?;
            Some(rounded(micros(t)))
        }
        Saving::Sync(_) => None,
    };
    // The default mode writes each checkpoint's file and rows after its save returns: that work
    // is finished (and checked: nothing damaged) before the restores are timed, as the disk is
    // settled below. A restore would otherwise wait for it, or share the machine with it.
    let damaged = store.damaged()?;
    if let Some(d) = damaged.first() {
        return Err(Failure::msg(format!(
            "bench: {} checkpoints damaged, {} the first: {}",
            damaged.len(),
            d.id,
            d.error
        )));
    }
    settle_disk();
    // Every restore, then every listing: a listing between two restores would leave its
    // garbage to the next restore (LangGraph's `list` decodes each checkpoint whole, and its
    // next `get_tuple` took ~30 % longer after one), so each is measured in a loop of its own,
    // here and in the peer.
    let mut restore = Vec::new();
    for e in &execs {
        let t = Instant::now();
        let latest = store.latest(e)?;
        restore.push(micros(t));
        if latest.is_none() {
            return Err(Failure::msg(format!(
                "bench: execution {e} has no latest checkpoint"
            )));
        }
    }
    let mut list = Vec::new();
    for e in &execs {
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
    // PostgreSQL keeps its data on the server: ask it what the tables take.
    let server_bytes = match (&db, mode) {
        (Some(db), Mode::Postgres) => Some(db.database_bytes().map_err(sql_failure)?),
        _ => None,
    };
    drop(files_or_null);
    drop(journaled);
    drop(db);
    drop(append_floor);
    drop(page_floor);
    let disk_bytes = server_bytes
        .unwrap_or_else(|| dir_bytes(tmp.as_path()).saturating_sub(dir_bytes(&floor_dir)));
    // The least the same rows cost in SQLite here, after the mode (its store closed); once per
    // mode, not again for its async run, whose rows are the same.
    let rows_floor = match (mode, durability) {
        (Mode::Sqlite | Mode::FilesSqlite, Durability::Sync) => {
            Some(super::rows_floor::measure(&floor_dir, executions, steps)?)
        }
        _ => None,
    };
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
        page_floor_us: rounded(median(&mut page)),
        disk_bytes,
        checkpoint_bytes_last: last_bytes,
        sync_us: median_of(&mut sync),
        sync_at_10_us: median_of(&mut sync_10),
        sync_at_last_us: median_of(&mut sync_last),
        sync_wait_at_last_us: median_of(&mut wait_last),
        checksum_at_last_us: median_of(&mut checksum_last),
        rows_after_at_10_us: median_of(&mut rows_10),
        rows_after_at_last_us: median_of(&mut rows_last),
        flush_us: median_of(&mut flushes),
        rows_floor_us: rows_floor.map(|r| r.all_us),
        rows_floor_at_10_us: rows_floor.and_then(|r| r.at_10_us),
        rows_floor_at_last_us: rows_floor.map(|r| r.at_last_us),
        whole_bytes: whole,
        append_floor_samples: append,
        page_floor_samples: page,
    })
}

/// Waits until what the saves wrote is on disk (`sync`), before the restores are timed: the
/// default mode leaves its files to be flushed after the saves return (by its flusher, about
/// once a second, and by the kernel's writeback), and that work, still running, would take a
/// core from the restores (their checksum is computed on a helper thread beside the parse).
/// The peer does the same (`os.sync()`). Best effort: where `sync` cannot run, the restores are
/// timed as they come.
fn settle_disk() {
    let _ = std::process::Command::new("sync")
        .stdin(std::process::Stdio::null())
        .status();
}
