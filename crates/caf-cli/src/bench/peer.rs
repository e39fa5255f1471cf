//! A peer checkpointer run on the same workload in the same run (`caf bench --peer`), and the
//! side-by-side table.

use super::stats::{median, rounded};
use super::{label, Durability, Figures, Mode};
use crate::output::Table;
use crate::Failure;
use anstyle::Style;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
pub(super) struct PeerRun {
    peer: Peer,
    python: PathBuf,
    script: PathBuf,
}

impl PeerRun {
    /// The peer's venv and script, or the one-line error that says how to set them up.
    pub(super) fn find(peer: Peer) -> Result<Self, Failure> {
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

    pub(super) fn name(&self) -> &'static str {
        match self.peer {
            Peer::Langgraph => "langgraph (SqliteSaver)",
        }
    }

    /// Runs the peer on E x S, its database in a temporary directory under `scratch`; with
    /// `background`, its saves are handed to a background thread (the peer's async mode);
    /// without, each save is followed by the page floor, timed apart (`--page-floor`), as in
    /// caf's own loop.
    pub(super) fn run(
        &self,
        executions: u32,
        steps: u32,
        background: bool,
        scratch: &Path,
    ) -> Result<PeerFigures, Failure> {
        let mut args = vec![
            "--executions".to_string(),
            executions.to_string(),
            "--steps".into(),
            steps.to_string(),
        ];
        if background {
            args.push("--async".into());
        } else {
            args.push("--page-floor".into());
        }
        let report = self.run_with(&args, scratch)?;
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
            page_floor_us: report["page_floor_us"].as_f64(),
            version: text(&report["packages"]["langgraph-checkpoint-sqlite"]),
            sqlite: text(&report["sqlite"]["version"]),
            journal_mode: text(&report["sqlite"]["journal_mode"]),
            synchronous: text(&report["sqlite"]["synchronous"]),
            report,
        })
    }

    /// Runs the peer's script with `args` and `--scratch`, and returns its JSON report.
    pub(super) fn run_with(
        &self,
        args: &[String],
        scratch: &Path,
    ) -> Result<serde_json::Value, Failure> {
        let out = Command::new(&self.python)
            .arg(&self.script)
            .args(args)
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
        serde_json::from_slice(&out.stdout)
            .map_err(|e| Failure::msg(format!("the LangGraph peer printed no JSON report ({e})")))
    }
}

/// What the peer reported, and the figures the comparison uses.
pub(super) struct PeerFigures {
    save_us: f64,
    restore_us: f64,
    list_us: f64,
    /// The page floor timed after each of the peer's saves, in its own loop (a peer script that
    /// does not report one leaves the comparison to caf's page floor).
    page_floor_us: Option<f64>,
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
    let default = caf_sql::SqlOptions::default().durability;
    let sqlite = match default {
        caf_sql::Durability::Default => {
            "WAL, committed with synchronous=NORMAL, then the log flushed (group commit)"
        }
        caf_sql::Durability::Full => "WAL, synchronous=FULL",
        caf_sql::Durability::Relaxed => "WAL, synchronous=NORMAL, not flushed",
    };
    let durable = default != caf_sql::Durability::Relaxed;
    match mode {
        Mode::Files => (
            true,
            "file fdatasync, rename, directory fsync per save".into(),
        ),
        Mode::FilesSqlite => match default {
            caf_sql::Durability::Default => (
                true,
                "one flush per save: an append to the store's journal, written directly with \
                 RWF_DSYNC (io_uring) where the system allows, else written and fdatasync'd; \
                 file and rows written after, unflushed (SQLite WAL, synchronous=NORMAL), \
                 applied again from the journal after a crash"
                    .into(),
            ),
            _ => (
                durable,
                format!("the SQLite commit ({sqlite}); files renamed in place unflushed"),
            ),
        },
        Mode::Sqlite => (durable, format!("SQLite {sqlite}")),
        Mode::Postgres => match durable {
            false => (false, "synchronous_commit=off".into()),
            true => (true, "synchronous_commit=on".into()),
        },
    }
}

/// caf / peer for one mode: below 1, caf is faster.
#[derive(Debug, Serialize)]
pub(super) struct Ratio {
    mode: Mode,
    /// Whether this mode's save is on disk when it returns.
    durable: bool,
    durability: String,
    /// Whether the save ratio compares like with like (both durable, or both not).
    save_like_for_like: bool,
    pub(super) save: f64,
    pub(super) restore: f64,
    pub(super) list: f64,
    /// This mode's save over its append floor.
    save_over_floor: f64,
    /// This mode's save over its own page floor: how many page flushes it costs.
    save_over_page_floor: f64,
    /// `save_over_page_floor` over the peer's save over the page floor of its own loop: the
    /// save ratio with each side's disk, as it was while that side ran, divided out (the flush
    /// moves from minute to minute). Below 1, caf is faster. Only when the peer reported its
    /// page floor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) save_in_page_floors: Option<f64>,
}

impl Ratio {
    /// The ratio table's cells: the save (marked when not like for like), the save in page
    /// floors, restore-latest and list, each as a [`verdict`].
    pub(super) fn cells(&self) -> [String; 4] {
        let mut save = verdict(self.save);
        if !self.save_like_for_like {
            save.push_str(" [not like for like]");
        }
        [
            save,
            self.save_in_page_floors.map_or("-".into(), verdict),
            verdict(self.restore),
            verdict(self.list),
        ]
    }
}

/// `caf bench --peer … --json`.
#[derive(Serialize)]
pub(super) struct SideBySide<'a> {
    pub(super) caf: &'a [Figures],
    peer: &'a serde_json::Value,
    peer_durable: bool,
    peer_durability: String,
    /// The append floor over every save of every caf mode of this run, median.
    append_floor_us: f64,
    /// The peer's save over that floor.
    peer_save_over_floor: f64,
    /// The page floor (one 4 KiB append and its `fdatasync`) over every save of every caf mode
    /// of this run, median: no durable save can cost less on this disk.
    page_floor_us: f64,
    /// The page floor timed after each of the peer's saves, in its own loop, median, when the
    /// peer reported one.
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_page_floor_us: Option<f64>,
    /// Half the peer's save over the page floor of its own loop (else over `page_floor_us`):
    /// below 1, saving twice as fast as the peer is below what any durable save cost on the
    /// disk as it was while the peer ran.
    pub(super) peer_half_save_over_page_floor: f64,
    /// caf / peer per operation and mode, medians: below 1, caf is faster.
    pub(super) ratios: Vec<Ratio>,
    /// The peer's async run (`--durability async`), which caf's async rows compare with.
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_async: Option<&'a serde_json::Value>,
    #[serde(skip)]
    figures: &'a PeerFigures,
    #[serde(skip)]
    async_figures: Option<&'a PeerFigures>,
}

/// `a / b`, to six decimals (the ratios of list times are small).
pub(super) fn ratio(a: f64, b: f64) -> f64 {
    (a / b.max(0.001) * 1e6).round() / 1e6
}

impl<'a> SideBySide<'a> {
    pub(super) fn new(
        caf: &'a [Figures],
        peer: &'a PeerFigures,
        peer_async: Option<&'a PeerFigures>,
    ) -> Self {
        // A floor's samples over every save of every caf mode of this run, median.
        let pooled = |samples: fn(&Figures) -> &[f64]| {
            let mut all: Vec<f64> = caf
                .iter()
                .flat_map(|f| samples(f).iter().copied())
                .collect();
            rounded(median(&mut all))
        };
        let floor = pooled(|f| &f.append_floor_samples);
        let page_floor = pooled(|f| &f.page_floor_samples);
        let peer_page_floor = peer.page_floor_us.filter(|p| *p > 0.0);
        let peer_in_page_floors = ratio(peer.save_us, peer_page_floor.unwrap_or(page_floor));
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
                // An async save compares with the peer's async save when it ran.
                let (against, against_durable) = match (f.durability, peer_async) {
                    (Durability::Async, Some(a)) => (a, false),
                    _ => (peer, peer.durable()),
                };
                let save_over_page_floor = ratio(f.save_us, f.page_floor_us);
                Ratio {
                    mode: f.mode,
                    durable,
                    durability,
                    save_like_for_like: durable == against_durable,
                    save: ratio(f.save_us, against.save_us),
                    restore: ratio(f.restore_us, peer.restore_us),
                    list: ratio(f.list_us, peer.list_us),
                    save_over_floor: ratio(f.save_us, f.append_floor_us),
                    save_over_page_floor,
                    save_in_page_floors: (f.durability == Durability::Sync
                        && peer_page_floor.is_some())
                    .then(|| ratio(save_over_page_floor, peer_in_page_floors)),
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
            page_floor_us: page_floor,
            peer_page_floor_us: peer_page_floor,
            peer_half_save_over_page_floor: ratio(peer_in_page_floors, 2.0),
            ratios,
            peer_async: peer_async.map(|a| &a.report),
            figures: peer,
            async_figures: peer_async,
        }
    }
}

/// A factor with three significant digits or so: `2.31`, `31.3`, `105`.
pub(super) fn factor(x: f64) -> String {
    if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// A ratio caf / peer: `2.31`, `0.0095` (the ratios of list times are small).
pub(super) fn shown(r: f64) -> String {
    if r >= 0.1 {
        format!("{r:.2}")
    } else {
        format!("{r:.4}")
    }
}

/// `2.31 (caf 2.31x slower)` / `0.0095 (caf 105x faster)`, for a ratio caf / peer.
pub(super) fn verdict(r: f64) -> String {
    let shown = shown(r);
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

pub(super) fn print_side_by_side(s: &SideBySide<'_>) {
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
        "SAVE/PAGE FLOOR",
        "RESTORE µs",
        "LIST µs",
        "DURABLE WHEN SAVE RETURNS",
    ]);
    for (f, r) in s.caf.iter().zip(&s.ratios) {
        table.row(vec![
            (format!("caf {}", label(f)), plain),
            (format!("{:.0}", f.save_us), plain),
            (format!("{:.2}x", r.save_over_floor), plain),
            (format!("{:.2}x", r.save_over_page_floor), plain),
            (format!("{:.0}", f.restore_us), plain),
            (format!("{:.0}", f.list_us), plain),
            (format!("{}: {}", yes_no(r.durable), r.durability), plain),
        ]);
    }
    table.row(vec![
        ("LangGraph SqliteSaver".into(), plain),
        (format!("{:.0}", p.save_us), plain),
        (format!("{:.2}x", s.peer_save_over_floor), plain),
        (
            format!("{:.2}x", s.peer_half_save_over_page_floor * 2.0),
            plain,
        ),
        (format!("{:.0}", p.restore_us), plain),
        (format!("{:.0}", p.list_us), plain),
        (
            format!("{}: {}", yes_no(s.peer_durable), s.peer_durability),
            plain,
        ),
    ]);
    if let Some(a) = s.async_figures {
        table.row(vec![
            ("LangGraph SqliteSaver async".into(), plain),
            (format!("{:.0}", a.save_us), plain),
            (
                format!("{:.2}x", ratio(a.save_us, s.append_floor_us)),
                plain,
            ),
            ("-".into(), plain),
            (format!("{:.0}", a.restore_us), plain),
            (format!("{:.0}", a.list_us), plain),
            (
                "no: durability=\"async\", each put on a background thread, in order".into(),
                plain,
            ),
        ]);
    }
    table.row(vec![
        ("floor".into(), plain),
        (format!("{:.0}", s.append_floor_us), plain),
        ("1.00x".into(), plain),
        ("-".into(), plain),
        ("-".into(), plain),
        ("-".into(), plain),
        (
            "append into a preallocated file + one fdatasync".into(),
            plain,
        ),
    ]);
    table.row(vec![
        ("page floor".into(), plain),
        (format!("{:.0}", s.page_floor_us), plain),
        (
            format!("{:.2}x", ratio(s.page_floor_us, s.append_floor_us)),
            plain,
        ),
        ("1.00x".into(), plain),
        ("-".into(), plain),
        ("-".into(), plain),
        (
            "one 4 KiB page appended + one fdatasync: the least a durable save costs".into(),
            plain,
        ),
    ]);
    table.print();
    crate::say!();
    let mut ratios = Table::new(&[
        "CAF / LANGGRAPH",
        "SAVE",
        "SAVE IN PAGE FLOORS",
        "RESTORE-LATEST",
        "LIST",
    ]);
    for (f, r) in s.caf.iter().zip(&s.ratios) {
        let mut row = vec![(label(f), plain)];
        row.extend(r.cells().map(|c| (c, plain)));
        ratios.row(row);
    }
    ratios.print();
    crate::say!(
        "medians per operation. caf / LangGraph is the time caf takes over the time LangGraph \
         takes: below 1, caf is faster."
    );
    crate::say!(
        "like with like: a save ratio compares saves that are both on disk when they return \
         (or both not); [not like for like] marks the others. Restore and list do not depend on \
         durability. An async save compares with LangGraph's async save when --durability \
         async ran it (each put handed to one background thread, as LangGraph's \
         durability=\"async\" does)."
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
    match s.peer_page_floor_us {
        Some(peer_page) => crate::say!(
            "page floor: one 4 KiB page appended and flushed after each save, in caf's loop and \
             in LangGraph's ({:.0} µs there); SAVE/PAGE FLOOR divides by the page floor of the \
             same loop, and SAVE IN PAGE FLOORS compares those: the save ratio with the disk's \
             speed while each side ran divided out. Half LangGraph's save is {:.2} page floors \
             of its loop: below 1, no durable save could have been twice as fast.",
            peer_page,
            s.peer_half_save_over_page_floor
        ),
        None => crate::say!(
            "page floor: one 4 KiB page appended and flushed after each caf save; LangGraph's \
             SAVE/PAGE FLOOR divides by caf's (its script reported none)."
        ),
    }
    crate::say!(
        "list: LangGraph's list returns every checkpoint whole (deserialized), caf's returns \
         summaries: each API's way to list an execution."
    );
}
