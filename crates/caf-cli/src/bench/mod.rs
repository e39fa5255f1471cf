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

mod concurrent;
mod floor;
mod peer;
mod rounds;
mod rows_floor;
mod stats;
mod workload;

use crate::cli::BenchArgs;
use crate::output::{self, Table};
use crate::target::Target;
use crate::{CmdResult, Failure};
use anstyle::Style;
use concurrent::{ConcurrentFigures, ConcurrentFloor, ConcurrentReport};
use floor::FloorKind;
pub use peer::Peer;
use peer::{print_side_by_side, PeerFigures, PeerRun, SideBySide};
use serde::Serialize;
use std::path::{Path, PathBuf};
use workload::{measure, sql_failure};

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
    /// One `fdatasync` of an append of one 4 KiB page into a preallocated file, after each
    /// save, median: the least any durable save costs on this disk (a journaled save's record,
    /// mostly a revision, is a few KB).
    page_floor_us: f64,
    disk_bytes: u64,
    save_mean_us: f64,
    save_p95_us: f64,
    floor_mean_us: f64,
    append_floor_mean_us: f64,
    restore_mean_us: f64,
    list_mean_us: f64,
    checkpoint_bytes_last: u64,
    /// The database part of a save alone (no file serialization), its flush excluded (SQLite;
    /// on PostgreSQL the commit waits for the server's flush), median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_us: Option<f64>,
    /// SQLite's flush of its log after each commit (group commit), median.
    #[serde(skip_serializing_if = "Option::is_none")]
    flush_us: Option<f64>,
    /// The database part of save #10 of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_at_10_us: Option<f64>,
    /// The database part of the last save of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_at_last_us: Option<f64>,
    /// Of `sync_at_last_us`, the wait for the checksum computed beside the rows (SQLite),
    /// median.
    #[serde(skip_serializing_if = "Option::is_none")]
    sync_wait_at_last_us: Option<f64>,
    /// The SHA-256 of the last document of each execution, hashed alone on the bench's thread,
    /// median: what that wait is bounded below by.
    #[serde(skip_serializing_if = "Option::is_none")]
    checksum_at_last_us: Option<f64>,
    /// The default mode (files + SQLite): its save is durable by the journal's flush, and its
    /// writer thread writes the rows after the save has returned. This is that transaction at
    /// save #10 of each execution (as `sync_at_10_us` times the sqlite mode's: the writers'
    /// turn, statements and commit, no flush), median; the writer is idle when the save is made.
    /// Sync durability only: an async save reaches the store after the bench has moved on.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_after_at_10_us: Option<f64>,
    /// The same, at the last save of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_after_at_last_us: Option<f64>,
    /// The SQL modes on SQLite: the rows floor ([`caf_sql::RowsFloor`]), the same workload's
    /// rows written with the store's own statements into tables without keys or indexes,
    /// nothing closed or checked, each after a flush, right after the mode: its transaction
    /// for every save, median: the least the SQL part of a save costs here.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_floor_us: Option<f64>,
    /// The same at save #10 of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_floor_at_10_us: Option<f64>,
    /// The same at the last save of each execution, median.
    #[serde(skip_serializing_if = "Option::is_none")]
    rows_floor_at_last_us: Option<f64>,
    /// What storing every checkpoint whole would take (the sum of their encodings).
    whole_bytes: u64,
    /// Every append-floor measurement, for the peer's save/floor.
    #[serde(skip)]
    append_floor_samples: Vec<f64>,
    /// Every page-floor measurement, for the peer's save/page floor.
    #[serde(skip)]
    page_floor_samples: Vec<f64>,
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

/// Runs `f` with the database URL `mode` measures on: for PostgreSQL, a scratch database made
/// on the server of `pg` and dropped when `f` returns; otherwise `pg` itself.
fn with_scratch_db<T>(
    mode: Mode,
    pg: Option<&str>,
    f: impl FnOnce(Option<&str>) -> Result<T, Failure>,
) -> Result<T, Failure> {
    match (mode, pg) {
        (Mode::Postgres, Some(url)) => {
            let db = caf_sql::ScratchDatabase::create(url).map_err(sql_failure)?;
            f(Some(db.url()))
        }
        _ => f(pg),
    }
}

/// Runs the benchmark and prints the figures.
pub fn run(t: &Target, json: bool, a: &BenchArgs) -> CmdResult {
    let pg = t.db.as_deref().filter(|u| u.starts_with("postgres"));
    if let (Some(w), Some(dir)) = (a.worker, &a.worker_dir) {
        let mode = a.mode.first().copied().unwrap_or(Mode::Files);
        return concurrent::work(mode, w, a.saves, dir, pg);
    }
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
    if modes.contains(&Mode::Postgres) && pg.is_none() {
        return Err(Failure::Usage(
            "--mode postgres needs --db postgres://…".into(),
        ));
    }
    // Before anything is measured: a peer that is not set up fails at once.
    let peer = a.peer.map(PeerRun::find).transpose()?;
    // The run's scratch directory: every mode's store stays in it until the run ends.
    let run_dir = tempfile::Builder::new()
        .prefix(".caf-bench-")
        .tempdir_in(&scratch)
        .map_err(|e| Failure::msg(format!("{}: {e}", scratch.display())))?;
    let scratch = run_dir.path().to_path_buf();
    if cfg!(debug_assertions) {
        output::warn_line(
            "this caf is a debug build: its figures are several times (about 9x) worse than an \
             optimized build's; measure with `cargo run --release -p caf-cli -- bench`",
        );
    }
    if a.rounds > 1 {
        // clap requires --peer with --rounds.
        let Some(peer) = peer else {
            return Err(Failure::Usage("--rounds needs --peer".into()));
        };
        return match a.concurrent {
            Some(n) => rounds::run_concurrent(&modes, n, a, &scratch, pg, &peer, json),
            None => rounds::run(&modes, a, &scratch, pg, &peer, json),
        };
    }
    if let Some(n) = a.concurrent {
        return run_concurrent(&modes, n, a.saves, &scratch, pg, peer.as_ref(), json);
    }
    let all = measure_modes(&modes, a, &scratch, pg, json)?;
    let (peer, peer_async) = match peer {
        Some(p) => {
            let (sync, background) = run_peer(&p, a, &scratch, json)?;
            (Some(sync), background)
        }
        None => (None, None),
    };
    if json {
        match &peer {
            Some(p) => output::print_json(&SideBySide::new(&all, p, peer_async.as_ref())),
            None => output::print_json(&all),
        }
        return Ok(());
    }
    let mut table = Table::new(&[
        "MODE",
        "SAVE µs",
        "FLOOR µs",
        "SAVE/FLOOR",
        "SQL µs (#10 → last)",
        "RESTORE µs",
        "LIST µs",
        "DISK (WHOLE)",
    ]);
    for f in &all {
        let plain = Style::new();
        let sync = match (f.sync_us, f.sync_at_10_us, f.sync_at_last_us) {
            (Some(s), Some(a), Some(b)) => format!("{s:.0} ({a:.0} → {b:.0})"),
            (Some(s), _, _) => format!("{s:.0}"),
            _ => match (f.rows_after_at_10_us, f.rows_after_at_last_us) {
                (Some(a), Some(b)) => format!("after: {a:.0} → {b:.0}"),
                _ => "-".into(),
            },
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
    if let Some(f) = all.first() {
        crate::say!(
            "FLOOR: a plain durable atomic write of the same bytes (temporary file, fsync, \
             rename, directory fsync); an append of them into a preallocated file and its \
             fdatasync takes {:.0} µs here, of one 4 KiB page {:.0} µs",
            f.append_floor_us,
            f.page_floor_us
        );
    }
    if all.iter().any(|f| f.sync_us.is_some()) {
        crate::say!(
            "SQL: the database's part of a save (the writers' turn, statements, commit, and on \
             SQLite the wait for the checksum computed beside), without the flush of SQLite's \
             log that follows the commit (--json: flush_us); PostgreSQL's commit includes the \
             server's flush"
        );
    }
    if all.iter().any(|f| f.rows_after_at_last_us.is_some()) {
        crate::say!(
            "SQL after: the default mode's save is durable once its journal record is flushed; \
             its writer thread writes the rows after the save returns: that transaction at \
             save #10 and the last (timed as SQL is)"
        );
    }
    for f in &all {
        if let (Some(every), Some(last)) = (f.rows_floor_us, f.rows_floor_at_last_us) {
            let at_10 = f
                .rows_floor_at_10_us
                .map_or_else(String::new, |a| format!("{a:.0} → "));
            crate::say!(
                "{}: rows floor {every:.0} µs ({at_10}{last:.0}): the same rows written with the \
                 same statements into tables without keys or indexes, nothing closed or \
                 checked, after a flush; the least a save's SQL part costs here",
                label(f)
            );
        }
    }
    for f in &all {
        if let (Some(wait), Some(hash)) = (f.sync_wait_at_last_us, f.checksum_at_last_us) {
            crate::say!(
                "{}: the last save's SQL part waited {wait:.0} µs for its checksum; the SHA-256 \
                 of that document alone takes {hash:.0} µs ({})",
                label(f),
                output::bytes(f.checkpoint_bytes_last)
            );
        }
    }
    for f in all.iter().filter(|f| f.durability == Durability::Async) {
        crate::say!(
            "{} async: a save returns once the checkpoint is encoded; the writer caught up {:.0} \
             µs after the last save",
            mode_name(f.mode),
            f.drain_us.unwrap_or_default()
        );
    }
    if let Some(p) = &peer {
        print_side_by_side(&SideBySide::new(&all, p, peer_async.as_ref()));
    }
    Ok(())
}

/// Measures each of `modes` on the single-agent workload, sync and, with `--durability async`,
/// async (the files modes), each store under `scratch`.
fn measure_modes(
    modes: &[Mode],
    a: &BenchArgs,
    scratch: &Path,
    pg: Option<&str>,
    json: bool,
) -> Result<Vec<Figures>, Failure> {
    let mut all = Vec::new();
    for &mode in modes {
        if !json {
            eprintln!(
                "measuring {}: {} x {} …",
                mode_name(mode),
                output::count(a.executions, "execution"),
                output::count(a.steps, "step")
            );
        }
        all.push(with_scratch_db(mode, pg, |pg| {
            measure(mode, Durability::Sync, scratch, a.executions, a.steps, pg)
        })?);
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
                scratch,
                a.executions,
                a.steps,
                pg,
            )?);
        }
    }
    Ok(all)
}

/// Runs the peer on the same workload: sync, and async too with `--durability async`.
fn run_peer(
    p: &PeerRun,
    a: &BenchArgs,
    scratch: &Path,
    json: bool,
) -> Result<(PeerFigures, Option<PeerFigures>), Failure> {
    if !json {
        eprintln!(
            "measuring {}: {} x {} …",
            p.name(),
            output::count(a.executions, "execution"),
            output::count(a.steps, "step")
        );
    }
    let sync = p.run(a.executions, a.steps, false, scratch)?;
    let background = if a.durability.contains(&Durability::Async) {
        if !json {
            eprintln!("measuring {} (async) …", p.name());
        }
        Some(p.run(a.executions, a.steps, true, scratch)?)
    } else {
        None
    };
    Ok((sync, background))
}

/// What one `--concurrent` measurement found: each mode, the three floors (each `None` where it
/// could not be measured), and the peer's report.
struct ConcurrentRound {
    all: Vec<ConcurrentFigures>,
    floors: [Option<ConcurrentFloor>; 3],
    peer: Option<serde_json::Value>,
}

impl ConcurrentRound {
    fn report(&self) -> ConcurrentReport<'_> {
        ConcurrentReport::new(
            &self.all,
            self.floors.each_ref().map(Option::as_ref),
            self.peer.as_ref(),
        )
    }
}

/// `--concurrent N`: each mode with N writer processes, then the peer the same way.
fn run_concurrent(
    modes: &[Mode],
    processes: u32,
    saves: u32,
    scratch: &Path,
    pg: Option<&str>,
    peer: Option<&PeerRun>,
    json: bool,
) -> CmdResult {
    let round = measure_concurrent(modes, processes, saves, scratch, pg, peer, false, json)?;
    if json {
        output::print_json(&round.report());
    } else {
        print_concurrent(&round);
    }
    Ok(())
}

/// Each mode with N writer processes, the floors, and the peer the same way: after caf's modes
/// and floors, or before them with `peer_first`.
#[allow(clippy::too_many_arguments)]
fn measure_concurrent(
    modes: &[Mode],
    processes: u32,
    saves: u32,
    scratch: &Path,
    pg: Option<&str>,
    peer: Option<&PeerRun>,
    peer_first: bool,
    json: bool,
) -> Result<ConcurrentRound, Failure> {
    let peer_writers = |p: &PeerRun| {
        if !json {
            eprintln!(
                "measuring {}: {} x {} into one SQLite file …",
                p.name(),
                output::count(processes, "writer"),
                output::count(saves, "save")
            );
        }
        concurrent::run_peer(p, processes, saves, scratch)
    };
    let mut peer_report = match peer.filter(|_| peer_first) {
        Some(p) => Some(peer_writers(p)?),
        None => None,
    };
    let mut all = Vec::new();
    for &mode in modes {
        if !json {
            eprintln!(
                "measuring {}: {} x {} into one store …",
                mode_name(mode),
                output::count(processes, "writer"),
                output::count(saves, "save")
            );
        }
        all.push(with_scratch_db(mode, pg, |pg| {
            concurrent::measure(mode, processes, saves, scratch, pg)
        })?);
    }
    // The modes measured are kept if a floor cannot be (no room for its files, say).
    let floors = measure_floors(processes, saves, scratch, json);
    if let Some(p) = peer.filter(|_| !peer_first) {
        peer_report = Some(peer_writers(p)?);
    }
    Ok(ConcurrentRound {
        all,
        floors,
        peer: peer_report,
    })
}

/// The floors of [`ConcurrentFloor`], one per [`FloorKind`]: appends alone, then appends and
/// files, then appends and checksummed files. One that cannot be measured is `None`, with a
/// warning on stderr.
fn measure_floors(
    processes: u32,
    saves: u32,
    scratch: &Path,
    json: bool,
) -> [Option<ConcurrentFloor>; 3] {
    let warn = |e: Failure| {
        let why = match e {
            Failure::Failed(lines) => lines.join("; "),
            Failure::Usage(line) => line,
            Failure::Status(n) => format!("status {n}"),
        };
        eprintln!("warning: the floor could not be measured: {why}");
    };
    let checkpoints = match concurrent::floor_checkpoints(saves) {
        Ok(c) => c,
        Err(e) => {
            warn(e);
            return [None, None, None];
        }
    };
    FloorKind::ALL.map(|kind| {
        if !json {
            eprintln!(
                "measuring the floor: {} x {} appended, one fdatasync each{} …",
                output::count(processes, "writer"),
                output::count(saves, "checkpoint"),
                kind.doing()
            );
        }
        concurrent::measure_floor(processes, &checkpoints, kind, scratch)
            .map_err(warn)
            .ok()
    })
}

fn print_concurrent(round: &ConcurrentRound) {
    let (all, peer) = (&round.all, round.peer.as_ref());
    let floors = round.floors.each_ref().map(Option::as_ref);
    let plain = Style::new();
    let mut table = Table::new(&[
        "STORE",
        "PROCESSES",
        "SAVES/S",
        "SAVED",
        "LOST",
        "ERRORS",
        "SECONDS",
        "CPU/SAVE",
    ]);
    for f in all {
        table.row(vec![
            (format!("caf {}", mode_name(f.mode)), plain),
            (format!("{} x {}", f.processes, f.saves_each), plain),
            (format!("{:.0}", f.saves_per_s), plain),
            (f.saved.to_string(), plain),
            (f.lost.to_string(), plain),
            (f.errors.to_string(), plain),
            (format!("{:.2}", f.seconds), plain),
            (format!("{:.0} µs", f.cpu_us_per_save), plain),
        ]);
    }
    if let Some(p) = peer {
        let n = |k: &str| p[k].as_f64().unwrap_or(0.0);
        table.row(vec![
            ("LangGraph SqliteSaver".into(), plain),
            (
                format!("{:.0} x {:.0}", n("processes"), n("saves_each")),
                plain,
            ),
            (format!("{:.0}", n("saves_per_s")), plain),
            (format!("{:.0}", n("saved")), plain),
            (format!("{:.0}", n("lost")), plain),
            (format!("{:.0}", n("errors")), plain),
            (format!("{:.2}", n("seconds")), plain),
            (format!("{:.0} µs", n("cpu_us_per_save")), plain),
        ]);
    }
    for floor in floors.into_iter().flatten() {
        table.row(vec![
            (floor.kind.names().0.into(), plain),
            (format!("{} x {}", floor.processes, floor.saves_each), plain),
            (format!("{:.0}", floor.saves_per_s), plain),
            ("-".into(), plain),
            ("-".into(), plain),
            ("-".into(), plain),
            (format!("{:.2}", floor.seconds), plain),
            (format!("{:.0} µs", floor.cpu_us_per_save), plain),
        ]);
    }
    table.print();
    for f in all.iter().filter(|f| f.errors > 0 || f.workers_crashed > 0) {
        for (message, n) in &f.error_kinds {
            crate::say!("caf {}: {n} x {message}", mode_name(f.mode));
        }
        if f.workers_crashed > 0 {
            crate::say!(
                "caf {}: {} worker(s) crashed",
                mode_name(f.mode),
                f.workers_crashed
            );
        }
    }
    if let Some(p) = peer {
        if let Some(kinds) = p["error_kinds"].as_object() {
            for (message, n) in kinds {
                crate::say!("LangGraph: {n} x {message}");
            }
        }
        let peer_rate = p["saves_per_s"].as_f64().unwrap_or(0.0);
        crate::say!();
        let mut ratios = Table::new(&["CAF / LANGGRAPH", "SAVES PER SECOND"]);
        let rows = all.iter().map(|f| (mode_name(f.mode), f.saves_per_s));
        let floor_rows = floors
            .into_iter()
            .flatten()
            .map(|f| (f.kind.names().1.to_string(), f.saves_per_s));
        for (name, rate) in rows.chain(floor_rows) {
            let r = peer::ratio(rate, peer_rate);
            ratios.row(vec![
                (name, plain),
                (
                    format!(
                        "{r:.2} (caf {})",
                        if r >= 1.0 {
                            format!("{}x more", peer::factor(r))
                        } else {
                            format!("{}x fewer", peer::factor(1.0 / r.max(1e-6)))
                        }
                    ),
                    plain,
                ),
            ]);
        }
        ratios.print();
    }
    crate::say!(
        "saves per second: the saves that returned, over the time from the word to go until the \
         last process reported; lost: saves that returned but are not in the store afterwards; \
         a failed save is not retried; floor: each writer appends the same checkpoints' bytes to \
         a preallocated file of its own and flushes each, with nothing else done; floor with \
         files: each writer also writes each checkpoint to a new file in one shared directory \
         (created, written, renamed, not flushed), as the modes with files do; checksummed \
         files: each writer also computes each file's SHA-256 first, as the format requires of \
         every file; CPU/SAVE: the \
         CPU time the writers spent (all threads, user and system) per save."
    );
}
