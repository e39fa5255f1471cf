//! `caf bench`: the "agent-run" workload of DESIGN.md, measured per storage mode.
//!
//! E executions x S steps. Each step appends a thought (400 bytes) and a completed tool call
//! (args with an 80-byte query, a 600-byte result), sets three variables and saves a full
//! checkpoint. Then the latest checkpoint of every execution is loaded and every execution's
//! checkpoints are listed. Figures are medians in microseconds per operation (means and p95 are
//! in the JSON too). The floor is a plain durable atomic write (temp file, fsync, rename, fsync of
//! the directory) of the same bytes, measured right after each save in the same run.

use crate::cli::BenchArgs;
use crate::output::{self, Table};
use crate::{CmdResult, Failure};
use anstyle::Style;
use caf_core::format::encode;
use caf_core::store::{write_atomic, AtomicWriteOptions};
use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, FileStore, ListFilter,
    RuntimeState,
};
use serde::Serialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A storage mode to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// JSON files only (FileStore).
    Files,
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

/// A deterministic filler string of exactly `len` bytes.
fn filler(len: usize, seed: usize) -> String {
    const WORDS: [&str; 8] = [
        "agent ", "reads ", "the ", "file ", "and ", "plans ", "next ", "step ",
    ];
    let mut s = String::with_capacity(len + 8);
    let mut i = seed;
    while s.len() < len {
        s.push_str(WORDS[i % WORDS.len()]);
        i += 3;
    }
    s.truncate(len);
    s
}

const KINDS: [&str; 3] = ["reasoning", "observation", "action"];
const TOOLS: [&str; 5] = ["search", "read_file", "write_file", "run_tests", "http_get"];

/// One step of the workload on `state`.
fn step(state: &mut RuntimeState, s: usize) -> Result<(), Failure> {
    state.add_thought(KINDS[s % 3], filler(400, s), Some(0.85));
    let tool = TOOLS[s % TOOLS.len()];
    let call = state.start_tool_call(tool, json!({"query": filler(80, s + 1), "n": s}));
    state
        .complete_tool_call(&call, json!(filler(600, s + 2)))
        .map_err(Failure::msg)?;
    state.set_variable("step", json!(s));
    state.set_variable("last_tool", json!(tool));
    state.set_variable("score", json!(s as f64 / 100.0));
    state.complete_step(None);
    Ok(())
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

fn measure_files(scratch: &Path, executions: u32, steps: u32) -> Result<Figures, Failure> {
    let tmp = tempfile::Builder::new()
        .prefix(".caf-bench-")
        .tempdir_in(scratch)
        .map_err(|e| Failure::msg(format!("{}: {e}", scratch.display())))?;
    let store_dir = tmp.path().join("store");
    let floor_dir = tmp.path().join("floor");
    std::fs::create_dir_all(&floor_dir)
        .map_err(|e| Failure::msg(format!("{}: {e}", floor_dir.display())))?;
    let manager = CheckpointManager::new(FileStore::open(&store_dir)?);
    let (mut save, mut floor) = (Vec::new(), Vec::new());
    let mut execs = Vec::new();
    let mut last_bytes = 0;
    for e in 0..executions {
        let mut state = RuntimeState::new(format!("bench-agent-{e}"));
        execs.push(state.execution_id().clone());
        for s in 1..=steps as usize {
            step(&mut state, s)?;
            let t = Instant::now();
            let c = manager.checkpoint(
                &mut state,
                CheckpointOptions::new(CheckpointReason::StepCompleted),
            )?;
            save.push(micros(t));
            let bytes = encode(&c).map_err(|e| Failure::msg(e.to_string()))?;
            last_bytes = bytes.len() as u64;
            let target = floor_dir.join(format!("{}.json", c.id));
            let t = Instant::now();
            write_atomic(&target, None, &bytes, AtomicWriteOptions::default())?;
            floor.push(micros(t));
        }
    }
    let store = manager.store();
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
    Ok(Figures {
        mode: Mode::Files,
        executions,
        steps,
        statistic: "median",
        save_mean_us: mean(&save),
        floor_mean_us: mean(&floor),
        restore_mean_us: mean(&restore),
        list_mean_us: mean(&list),
        save_p95_us: quantile(&mut save, 0.95),
        save_us: median(&mut save),
        restore_us: median(&mut restore),
        list_us: median(&mut list),
        floor_us: median(&mut floor),
        disk_bytes: dir_bytes(&store_dir),
        checkpoint_bytes_last: last_bytes,
    })
}

/// Runs the benchmark and prints the figures.
pub fn run(dir: &Path, json: bool, a: &BenchArgs) -> CmdResult {
    let scratch: PathBuf = match &a.scratch {
        Some(p) => p.clone(),
        None => dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let mut modes = a.mode.clone();
    modes.dedup();
    let mut all = Vec::new();
    for mode in modes {
        if !json {
            eprintln!(
                "measuring {mode:?}: {} executions x {} steps …",
                a.executions, a.steps
            );
        }
        all.push(match mode {
            Mode::Files => measure_files(&scratch, a.executions, a.steps)?,
        });
    }
    if json {
        output::print_json(&all);
        return Ok(());
    }
    let mut t = Table::new(&[
        "MODE",
        "SAVE µs",
        "FLOOR µs",
        "SAVE/FLOOR",
        "RESTORE µs",
        "LIST µs",
        "DISK",
    ]);
    for f in &all {
        let plain = Style::new();
        t.row(vec![
            (format!("{:?}", f.mode).to_lowercase(), plain),
            (format!("{:.0}", f.save_us), plain),
            (format!("{:.0}", f.floor_us), plain),
            (format!("{:.2}x", f.save_us / f.floor_us.max(1.0)), plain),
            (format!("{:.0}", f.restore_us), plain),
            (format!("{:.0}", f.list_us), plain),
            (output::bytes(f.disk_bytes), plain),
        ]);
    }
    t.print();
    println!("medians per operation; --json adds means and p95");
    Ok(())
}
