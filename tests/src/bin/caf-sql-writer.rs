//! A checkpoint writer for the SQL concurrency tests (`tests/tests/sql_concurrency.rs`).
//!
//! `caf-sql-writer URL EXECUTION_ID N` opens a [`SqlStore`] at `URL` and takes `N` checkpoints
//! of execution `EXECUTION_ID`, each step adding a thought and a completed tool call, setting a
//! variable and completing a plan step. It prints `saved N` and exits 0, or prints the error
//! on stderr and exits 1.

use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, ExecutionId, RuntimeState};
use caf_sql::SqlStore;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;

fn run(url: &str, execution: &str, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let manager = CheckpointManager::new(SqlStore::open(url)?);
    let id = ExecutionId::new(execution)?;
    let mut state = RuntimeState::with_clock("sql-writer", id, Arc::new(caf_core::SystemClock));
    state.set_plan((0..n).map(|i| format!("step {i}")));
    state.set_variable("task", json!(format!("write {n} checkpoints")));
    for s in 0..n {
        state.add_thought(
            "reasoning",
            format!("{execution} step {s}: thinking"),
            Some(0.85),
        );
        let call = state.start_tool_call("search", json!({"query": execution, "n": s}));
        state.complete_tool_call(&call, json!({"hits": s}))?;
        state.set_variable("step", json!(s));
        state.add_tokens(10);
        state.complete_step(None);
        let reason = if s + 1 == n {
            CheckpointReason::Completed
        } else {
            CheckpointReason::StepCompleted
        };
        manager.checkpoint(&mut state, CheckpointOptions::new(reason))?;
    }
    println!("saved {n}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(execution), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: caf-sql-writer URL EXECUTION_ID N");
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<usize>() else {
        eprintln!("caf-sql-writer: N must be a number, not {n:?}");
        return ExitCode::from(2);
    };
    match run(url, execution, n) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("caf-sql-writer: {e}");
            ExitCode::FAILURE
        }
    }
}
