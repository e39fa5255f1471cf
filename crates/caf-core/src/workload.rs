//! The "agent-run" workload of the design document, shared by `caf bench` and the tests that
//! measure sizes: each step of an execution appends a 400-byte thought (type cycling reasoning /
//! observation / action, confidence 0.85) and one completed tool call (tool cycling search /
//! read_file / write_file / run_tests / http_get, args `{"query": <80 bytes>, "n": step}`, a
//! 600-byte result), sets the variables `step`, `last_tool` and `score`, and completes a step.
//! The caller saves a checkpoint after each step.

use crate::runtime::{RuntimeState, StateError};
use crate::{
    CheckpointId, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore,
};
use crate::{ExecutionId, Result};
use serde_json::json;

/// Thought types, cycled by step.
pub const THOUGHT_KINDS: [&str; 3] = ["reasoning", "observation", "action"];
/// Tools, cycled by step.
pub const TOOLS: [&str; 5] = ["search", "read_file", "write_file", "run_tests", "http_get"];

/// A deterministic filler string of exactly `len` bytes (ASCII words), varied by `seed`.
pub fn filler(len: usize, seed: usize) -> String {
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

/// Does step `s` of the workload on `state`.
pub fn agent_run_step(state: &mut RuntimeState, s: usize) -> Result<(), StateError> {
    state.add_thought(THOUGHT_KINDS[s % 3], filler(400, s), Some(0.85));
    let tool = TOOLS[s % TOOLS.len()];
    let call = state.start_tool_call(tool, json!({"query": filler(80, s + 1), "n": s}));
    state.complete_tool_call(&call, json!(filler(600, s + 2)))?;
    state.set_variable("step", json!(s));
    state.set_variable("last_tool", json!(tool));
    state.set_variable("score", json!(s as f64 / 100.0));
    state.complete_step(None);
    Ok(())
}

/// Runs one execution of the workload, `steps` steps of a new agent named `agent`, saving a
/// checkpoint (reason `step_completed`) through `manager` after each step. Returns the
/// execution's id and its last checkpoint's (`None` for no steps).
pub fn agent_run<S: CheckpointStore>(
    manager: &CheckpointManager<S>,
    agent: &str,
    steps: usize,
) -> Result<(ExecutionId, Option<CheckpointId>)> {
    let mut state = RuntimeState::new(agent);
    let mut last = None;
    for s in 1..=steps {
        agent_run_step(&mut state, s)?;
        let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
        last = Some(manager.checkpoint(&mut state, options)?.id);
    }
    Ok((state.execution_id().clone(), last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_saves_a_checkpoint_per_step_and_returns_the_last() {
        let manager = CheckpointManager::new(crate::MemoryStore::new());
        let (execution, last) = agent_run(&manager, "a", 3).unwrap();
        let listed = manager
            .store()
            .list(&crate::ListFilter::execution(&execution))
            .unwrap();
        assert_eq!(listed.len(), 3);
        let newest = manager.store().latest(&execution).unwrap().unwrap();
        assert_eq!(Some(newest.id), last);
        assert_eq!(newest.snapshot.thought_chain.thoughts.len(), 3);
        assert_eq!(agent_run(&manager, "b", 0).unwrap().1, None);
    }

    #[test]
    fn filler_has_the_exact_length_and_varies() {
        assert_eq!(filler(400, 1).len(), 400);
        assert_eq!(filler(0, 1), "");
        assert_ne!(filler(80, 1), filler(80, 2));
    }

    #[test]
    fn a_step_adds_a_thought_a_completed_call_and_variables() {
        let mut s = RuntimeState::new("a");
        agent_run_step(&mut s, 1).unwrap();
        assert_eq!(s.thoughts().len(), 1);
        assert_eq!(s.thoughts()[0].content.len(), 400);
        assert_eq!(s.tool_calls()[0].tool_id, "read_file");
        assert_eq!(s.variable("step"), Some(&json!(1)));
        assert_eq!(s.step_number(), 1);
    }
}
