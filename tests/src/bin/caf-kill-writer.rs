//! A checkpoint writer that is killed, for `tests/tests/kill.rs` and the soak tests
//! (`tests/tests/faults/soak.rs`).
//!
//! ```text
//! caf-kill-writer DIR [EXECUTION_ID] [--own-db | --db URL [--no-files]] [--log FILE --count N]
//! ```
//!
//! It opens the store in `DIR` as the `caf` command line does ([`caf_sql::Location`]): the
//! files alone; with `--own-db` the files and the directory's own SQLite database
//! (`DIR/.caf/caf.db`); with `--db URL` the files and that database; with `--no-files` the
//! database alone. Then it loops: add a thought and a completed tool call, set a variable,
//! complete a step, and take a durable checkpoint. With `EXECUTION_ID` it resumes that
//! execution from its latest checkpoint (or starts it); without, it starts a new execution.
//! It prints `ready EXECUTION_ID` on stdout once start-up is over and the loop begins.
//!
//! - Without `--log` it runs until it is killed, and every 10 checkpoints deletes all but the 8
//!   newest of its execution, so that deletions get killed half-way too.
//! - With `--log FILE --count N` it deletes nothing, appends the id of each checkpoint to `FILE`
//!   (one line, written once `save` returned: the save is acknowledged), and exits 0 once `FILE`
//!   holds `N` ids (a restarted writer counts those its earlier runs logged).

use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, Error, ExecutionId,
    ListFilter, RuntimeState,
};
use caf_sql::{Access, Location};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// What the command line asked for.
#[derive(Debug, Default)]
struct Args {
    dir: String,
    execution: Option<String>,
    own_db: bool,
    db: Option<String>,
    no_files: bool,
    log: Option<String>,
    count: Option<usize>,
}

fn parse(raw: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut positional = Vec::new();
    let mut it = raw.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--own-db" => a.own_db = true,
            "--no-files" => a.no_files = true,
            "--db" => a.db = Some(value("--db")?),
            "--log" => a.log = Some(value("--log")?),
            "--count" => {
                let n = value("--count")?;
                a.count = Some(
                    n.parse()
                        .map_err(|_| format!("--count: not a number: {n}"))?,
                );
            }
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            other => positional.push(other.to_string()),
        }
    }
    let mut positional = positional.into_iter();
    a.dir = positional.next().ok_or("no DIR")?;
    a.execution = positional.next();
    if positional.next().is_some() {
        return Err("too many arguments".into());
    }
    if a.log.is_some() != a.count.is_some() {
        return Err("--log and --count go together".into());
    }
    Ok(a)
}

/// How many ids the log holds (whole lines only: a killed run may have left half a line).
fn logged(path: &str) -> usize {
    std::fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

fn run(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let access = if a.own_db {
        Access::CreateWithDatabase
    } else {
        Access::Create
    };
    let store = Location::new(&a.dir, a.db.clone(), a.no_files).open(access)?;
    let manager = CheckpointManager::new(store);
    let mut state = match &a.execution {
        None => RuntimeState::new("kill-writer"),
        Some(e) => {
            let id = ExecutionId::new(e)?;
            match manager.restore_latest(&id) {
                Ok(restored) => restored.state,
                Err(Error::NotFound { .. }) => {
                    RuntimeState::with_clock("kill-writer", id, Arc::new(caf_core::SystemClock))
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let filter = ListFilter::execution(state.execution_id());
    let mut log = match &a.log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?,
        ),
        None => None,
    };
    let mut saved = a.log.as_deref().map_or(0, logged);
    // Tell the test that start-up (open, reconcile, restore) is over and saving begins.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready {}", state.execution_id());
    let _ = out.flush();
    drop(out);
    for i in 0u64.. {
        if a.count.is_some_and(|n| saved >= n) {
            return Ok(());
        }
        let step = state.step_number();
        state.add_thought(
            "reasoning",
            format!("step {step}: deciding what to do next"),
            Some(0.85),
        );
        let call = state.start_tool_call("search", json!({"query": "kill test", "n": step}));
        state.complete_tool_call(&call, json!({"hits": step, "text": "result ".repeat(8)}))?;
        state.set_variable("step", json!(step));
        state.add_tokens(100);
        state.complete_step(None);
        let c = manager.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        )?;
        if let Some(log) = &mut log {
            // One write of a whole line, after the save returned.
            log.write_all(format!("{}\n", c.id).as_bytes())?;
            saved += 1;
        } else if i % 10 == 9 {
            let store = manager.store();
            for old in store.list(&filter)?.iter().skip(8) {
                store.delete(&old.id)?;
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&raw) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("caf-kill-writer: {e}");
            eprintln!(
                "usage: caf-kill-writer DIR [EXECUTION_ID] [--own-db | --db URL [--no-files]] \
                 [--log FILE --count N]"
            );
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("caf-kill-writer: {e}");
            ExitCode::FAILURE
        }
    }
}
