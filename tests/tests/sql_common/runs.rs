//! Checkpoints of simulated agent runs, in the order they were taken: a `caf demo`-like run
//! (plan, thoughts with children, tool calls that complete later or fail, a crash and a resume,
//! a fork, pauses, errors, labels) and the "agent-run" workload of DESIGN.md.

use caf_core::clock::{utc, SimulatedClock};
use caf_core::{
    Checkpoint, CheckpointId, CheckpointManager, CheckpointOptions, CheckpointReason, ExecutionId,
    MemoryStore, RuntimeState,
};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

type Manager = CheckpointManager<MemoryStore>;

fn manager(clock: &Arc<SimulatedClock>, prefix: &str) -> Manager {
    let n = Arc::new(AtomicU64::new(0));
    let prefix = prefix.to_string();
    CheckpointManager::new(MemoryStore::with_max_per_execution(1_000_000))
        .with_clock(clock.clone())
        .with_id_source(move || {
            let i = n.fetch_add(1, Ordering::SeqCst);
            CheckpointId::new(format!("ckpt_{prefix}_{i:05}")).unwrap()
        })
}

fn save(m: &Manager, state: &mut RuntimeState, o: CheckpointOptions, out: &mut Vec<Checkpoint>) {
    out.push(m.checkpoint(state, o).unwrap());
}

/// A demo-like run of execution `exec_demo_<seed>` with `steps` plan steps; every checkpoint
/// in the order taken.
pub fn demo_run(seed: u64, steps: usize) -> Vec<Checkpoint> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let clock = Arc::new(SimulatedClock::starting_at(
        utc(2026, 1, 5, 9, 0, 0).unwrap(),
    ));
    let m = manager(&clock, &format!("demo{seed}"));
    let exec = ExecutionId::new(format!("exec_demo_{seed}")).unwrap();
    let mut state = RuntimeState::with_clock("research-agent", exec.clone(), clock.clone());
    let plan: Vec<String> = (0..steps).map(|i| format!("step {i}: do things")).collect();
    state.set_plan(plan);
    state.set_variable("task", json!("Compare vector databases"));
    state.push_message("user", "Compare vector databases");
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for s in 1..=steps {
        let words = |rng: &mut fastrand::Rng, n: usize| -> String {
            (0..n)
                .map(|_| ["latency", "recall", "index", "shard", "é", "漢"][rng.usize(..6)])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let t = state.add_thought(
            "reasoning",
            format!("step {s}: {}", words(&mut rng, 8)),
            Some(0.5 + rng.f64() / 2.0),
        );
        // A call that completes during the next step: stored running, then completed.
        if let Some(call) = pending.take() {
            state
                .complete_tool_call(&call, json!({"hits": s, "text": words(&mut rng, 5)}))
                .unwrap();
        }
        let call =
            state.start_tool_call(["search", "read_file", "http_get"][s % 3], json!({"q": s}));
        if s.is_multiple_of(4) {
            state.fail_tool_call(&call, "timeout after 30 s").unwrap();
        } else {
            pending = Some(call);
        }
        let queued = state.queue_tool_call("write_file", json!({"path": format!("notes/{s}.md")}));
        state.begin_tool_call(&queued).unwrap();
        state.complete_tool_call(&queued, json!(null)).unwrap();
        state
            .add_child_thought(&t, "observation", words(&mut rng, 5), Some(0.85))
            .unwrap();
        clock.advance_ms(100 + rng.u64(..900));
        state.set_variable("step", json!(s));
        state.set_variable("score", json!(rng.f64()));
        state.push_history(json!({"step": s}));
        state.add_tokens(100 + rng.u64(..400));
        state.complete_step(Some(json!({"summary": words(&mut rng, 3)})));
        let mut o = CheckpointOptions::new(CheckpointReason::StepCompleted);
        if s.is_multiple_of(5) {
            o = CheckpointOptions::new(CheckpointReason::Paused)
                .label("review")
                .named(format!("pause {s}"));
        }
        save(&m, &mut state, o, &mut out);
        if s == steps / 2 {
            // A crash: the state is lost and the agent resumes from its latest checkpoint.
            state = m.restore_latest(&exec).unwrap().state;
            state.add_thought("reflection", "resumed after a crash", None);
            save(
                &m,
                &mut state,
                CheckpointOptions::new(CheckpointReason::Manual),
                &mut out,
            );
        }
        if s == steps / 3 {
            // A fork from an older checkpoint: a new line, then back to the main state.
            let old = out[out.len() / 2].id.clone();
            let mut fork = m.restore(&old).unwrap().state;
            fork.add_thought("decision", "what if we tried another way", Some(0.3));
            save(
                &m,
                &mut fork,
                CheckpointOptions::new(CheckpointReason::Branch),
                &mut out,
            );
        }
    }
    if let Some(call) = pending.take() {
        state.complete_tool_call(&call, json!("late")).unwrap();
    }
    save(
        &m,
        &mut state,
        CheckpointOptions::new(CheckpointReason::Completed).label("final"),
        &mut out,
    );
    out
}

/// The agent-run workload of DESIGN.md (as `caf bench` runs it): `executions` × `steps`; each
/// step adds a 400-byte thought and a completed tool call (80-byte query, 600-byte result),
/// sets `step`, `last_tool`, `score`, and saves. Every checkpoint in the order taken.
pub fn agent_run(executions: usize, steps: usize) -> Vec<Checkpoint> {
    let clock = Arc::new(SimulatedClock::starting_at(
        utc(2026, 1, 5, 9, 0, 0).unwrap(),
    ));
    let m = manager(&clock, "run");
    let mut out = Vec::new();
    for e in 0..executions {
        let exec = ExecutionId::new(format!("exec_run_{e:03}")).unwrap();
        let mut state = RuntimeState::with_clock("bench-agent", exec, clock.clone());
        for s in 0..steps {
            caf_core::workload::agent_run_step(&mut state, s).unwrap();
            clock.advance_ms(5);
            save(
                &m,
                &mut state,
                CheckpointOptions::new(CheckpointReason::StepCompleted),
                &mut out,
            );
        }
    }
    out
}
