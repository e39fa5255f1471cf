//! A checkpoint writer that runs until it is killed, for `tests/tests/kill.rs`.
//!
//! `caf-kill-writer DIR [EXECUTION_ID]` opens a [`FileStore`] in `DIR` and loops forever: add a
//! thought and a completed tool call, set a variable, complete a step, and take a durable
//! checkpoint. With `EXECUTION_ID` it resumes that execution from its latest checkpoint (or
//! starts it); without, it starts a new execution. Every 10 checkpoints it deletes all but the
//! 8 newest of its execution, so that deletions get killed half-way too. It prints
//! `ready EXECUTION_ID` on stdout once start-up is over and the loop begins.

use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, Error, ExecutionId,
    FileStore, ListFilter, RuntimeState,
};
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

fn run(dir: &str, execution: Option<&str>) -> caf_core::Result<()> {
    let manager = CheckpointManager::new(FileStore::open(dir)?);
    let mut state = match execution {
        None => RuntimeState::new("kill-writer"),
        Some(e) => {
            let id = ExecutionId::new(e)?;
            match manager.restore_latest(&id) {
                Ok(restored) => restored.state,
                Err(Error::NotFound { .. }) => {
                    RuntimeState::with_clock("kill-writer", id, Arc::new(caf_core::SystemClock))
                }
                Err(e) => return Err(e),
            }
        }
    };
    let filter = ListFilter::execution(state.execution_id());
    // Tell the test that start-up (open, reconcile, restore) is over and saving begins.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready {}", state.execution_id());
    let _ = out.flush();
    drop(out);
    for i in 0u64.. {
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
        manager.checkpoint(
            &mut state,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        )?;
        if i % 10 == 9 {
            let store = manager.store();
            for old in store.list(&filter)?.iter().skip(8) {
                store.delete(&old.id)?;
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: caf-kill-writer DIR [EXECUTION_ID]");
        return ExitCode::from(2);
    };
    match run(dir, args.get(2).map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("caf-kill-writer: {e}");
            ExitCode::FAILURE
        }
    }
}
