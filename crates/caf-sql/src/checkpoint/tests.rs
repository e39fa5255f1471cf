//! What a save costs in statements: the usual save (a child of the tip this store wrote last)
//! runs a fixed, small set of statements, all prepared once per connection and reused by every
//! execution.

use crate::statement::tests::watch;
use crate::SqlStore;
use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
use serde_json::json;

/// One step of an agent: a thought, a completed tool call (its result replaces the previous
/// one in the results map), three variables changed.
fn step(state: &mut RuntimeState, s: usize) {
    state.add_thought("reasoning", format!("thinking about step {s}"), Some(0.85));
    let call = state.start_tool_call("search", json!({"query": "q", "n": s}));
    state
        .complete_tool_call(&call, json!(format!("result {s}")))
        .unwrap();
    state.set_variable("step", json!(s));
    state.set_variable("last_tool", json!(format!("search #{s}")));
    state.set_variable("score", json!(s as f64 / 100.0));
}

fn run(manager: &CheckpointManager<SqlStore>, agent: &str, steps: usize) -> RuntimeState {
    let mut state = RuntimeState::new(agent);
    for s in 0..steps {
        step(&mut state, s);
        let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
        manager.checkpoint(&mut state, options).unwrap();
    }
    state
}

#[test]
fn a_save_that_continues_a_remembered_line_runs_six_prepared_statements() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("caf.db").display());
    let manager = CheckpointManager::new(SqlStore::open(&url).unwrap());
    let mut state = run(&manager, "agent-a", 3);
    let seen = watch(&mut manager.store().lock().conn);
    step(&mut state, 3);
    let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
    let saved = manager.checkpoint(&mut state, options).unwrap();
    let seen = seen.lock().unwrap();
    // The checkpoint row (with its check that the parent is still the tip), the entries that
    // changed closed (three variables, the tool's result), their new revisions, the thought,
    // the tool call, the execution's row: nothing read first.
    assert_eq!(seen.run.len(), 6, "{:#?}", seen.run);
    assert!(
        seen.run[0].contains("INSERT INTO checkpoints"),
        "{}",
        seen.run[0]
    );
    assert!(seen.run.iter().all(|sql| !sql.starts_with("SELECT")));
    assert!(seen.prepared.is_empty(), "{:#?}", seen.prepared);
    drop(seen);
    assert_eq!(manager.store().load_checkpoint(&saved.id).unwrap(), saved);
}

#[test]
fn another_execution_reuses_every_prepared_statement() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("caf.db").display());
    let manager = CheckpointManager::new(SqlStore::open(&url).unwrap());
    run(&manager, "agent-a", 4);
    let seen = watch(&mut manager.store().lock().conn);
    let state = run(&manager, "agent-b", 4);
    let seen = seen.lock().unwrap();
    assert!(seen.prepared.is_empty(), "{:#?}", seen.prepared);
    assert!(!seen.run.is_empty());
    drop(seen);
    let latest = manager
        .store()
        .load_checkpoint(state.last_checkpoint().unwrap());
    assert_eq!(latest.unwrap().snapshot, *state.snapshot());
}
