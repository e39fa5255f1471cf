//! How long `caf_core::diff` takes on two ~1 MB checkpoints.
//!
//! Checkpoint A has 600 thoughts of ~1 KB (multi-line), 300 completed tool calls with ~1 KB
//! results, 200 variables and 200 history entries. B is A with about 1% changed: 6 thoughts
//! edited, 6 added, 3 calls edited, 3 added, 2 variables changed, 2 history entries appended.
//! Each case runs 50 times after a warm-up; the median is printed.
//!
//! ```text
//! cargo run --release -p caf-core --example diff_bench
//! ```

use caf_core::format::schema::SCHEMA_URL;
use caf_core::format::{
    encode, Checkpoint, JsonObject, Metadata, Snapshot, Thought, ToolCall, ToolStatus,
};
use caf_core::{diff, CheckpointId, CheckpointReason, ExecutionId, Timestamp, CURRENT_VERSION};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

const RUNS: usize = 50;

/// About `n` bytes of text in lines of ~80 characters.
fn text(seed: usize, n: usize) -> String {
    let words = [
        "latency",
        "recall",
        "index",
        "shard",
        "replica",
        "throughput",
        "cosine",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut i = seed;
    while s.len() < n {
        s.push_str(words[i % words.len()]);
        i = i.wrapping_mul(31).wrapping_add(7);
        s.push(if s.len() % 80 < 8 { '\n' } else { ' ' });
    }
    s
}

fn thought(i: usize, t: Timestamp) -> Thought {
    Thought {
        id: format!("th_{i:05}"),
        kind: ["reasoning", "observation", "action"][i % 3].into(),
        content: text(i, 1000),
        confidence: Some(0.85),
        parent_id: None,
        created_at: t,
        reasoning: None,
        alternatives: Vec::new(),
        children: Vec::new(),
        metadata: JsonObject::new(),
        extensions: JsonObject::new(),
    }
}

fn call(i: usize, t: Timestamp) -> ToolCall {
    ToolCall {
        id: format!("call_{i:05}"),
        tool_id: ["search", "read_file", "write_file", "run_tests", "http_get"][i % 5].into(),
        args: json!({"query": text(i + 7, 80), "n": i}),
        status: ToolStatus::Completed,
        result: Some(json!(text(i + 3, 1000))),
        success: Some(true),
        error: None,
        started_at: Some(t),
        completed_at: Some(t),
        duration_ms: Some(12),
        extensions: JsonObject::new(),
    }
}

fn checkpoint_a() -> Result<Checkpoint, Box<dyn std::error::Error>> {
    let t = Timestamp::from_micros(1_767_225_600_000_000);
    let mut snapshot = Snapshot::default();
    snapshot.thought_chain.thoughts = (0..600).map(|i| Arc::new(thought(i, t))).collect();
    snapshot.tool_state.calls = (0..300).map(|i| Arc::new(call(i, t))).collect();
    for i in 0..200 {
        let v = json!({"i": i, "note": text(i, 60)});
        snapshot.context.variables.insert(format!("var_{i}"), v);
        let h = json!({"step": i, "done": text(i + 1, 60)});
        snapshot.context.history.push(h);
    }
    snapshot.progress.step_number = 300;
    Ok(Checkpoint {
        schema: SCHEMA_URL.to_string(),
        version: CURRENT_VERSION.to_string(),
        id: CheckpointId::new("ckpt_bench_a")?,
        parent_id: None,
        execution_id: ExecutionId::new("exec_bench")?,
        agent_id: "bench-agent".into(),
        timestamp: t,
        metadata: Metadata {
            step_number: 300,
            tokens_used: 1_000_000,
            duration_ms: 600_000,
            checkpoint_reason: CheckpointReason::StepCompleted,
            name: None,
            description: None,
            labels: Vec::new(),
            agent_name: None,
            branch: None,
            extensions: JsonObject::new(),
        },
        snapshot,
        extensions: JsonObject::new(),
    })
}

/// A with about 1% of its content changed.
fn checkpoint_b(a: &Checkpoint) -> Result<Checkpoint, Box<dyn std::error::Error>> {
    let mut b = a.clone();
    b.id = CheckpointId::new("ckpt_bench_b")?;
    b.parent_id = Some(a.id.clone());
    b.timestamp = Timestamp::from_micros(a.timestamp.as_micros() + 1_000_000);
    b.metadata.tokens_used += 5_000;
    b.metadata.duration_ms += 3_000;
    b.metadata.step_number += 3;
    let s = &mut b.snapshot;
    s.progress.step_number += 3;
    for i in (0..600).step_by(100) {
        Arc::make_mut(&mut s.thought_chain.thoughts[i])
            .content
            .push_str("\nrevised: one more line\n");
    }
    for i in 600..606 {
        s.thought_chain
            .thoughts
            .push(Arc::new(thought(i, b.timestamp)));
    }
    for i in [10, 150, 290] {
        Arc::make_mut(&mut s.tool_state.calls[i]).args["n"] = json!(-1);
    }
    for i in 300..303 {
        s.tool_state.calls.push(Arc::new(call(i, b.timestamp)));
    }
    s.context.variables.insert("var_5".into(), json!(5));
    s.context
        .variables
        .insert("var_77".into(), json!("changed"));
    s.context.history.push(json!({"step": 200}));
    s.context.history.push(json!({"step": 201}));
    Ok(b)
}

/// The median of `RUNS` timed runs of `f`, in microseconds.
fn median_us(mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = checkpoint_a()?;
    let b = checkpoint_b(&a)?;
    let (size_a, size_b) = (encode(&a)?.len(), encode(&b)?.len());
    let d = diff(&a, &b);
    println!(
        "checkpoints: A {size_a} bytes, B {size_b} bytes; diff A→B: {} thoughts added, {} changed, \
         {} calls added, {} changed, {} context changes",
        d.thoughts_added.len(),
        d.thoughts_changed.len(),
        d.tool_calls_added.len(),
        d.tool_calls_changed.len(),
        d.context_changes.len()
    );
    let same = median_us(|| {
        black_box(diff(black_box(&a), black_box(&a)));
    });
    let one_pct = median_us(|| {
        black_box(diff(black_box(&a), black_box(&b)));
    });
    let with_json = median_us(|| {
        black_box(serde_json::to_vec(&diff(black_box(&a), black_box(&b))).ok());
    });
    println!("diff(A, A):          median {same:>8.1} µs over {RUNS} runs");
    println!("diff(A, B) (1%):     median {one_pct:>8.1} µs over {RUNS} runs");
    println!("diff(A, B) + JSON:   median {with_json:>8.1} µs over {RUNS} runs");
    Ok(())
}
