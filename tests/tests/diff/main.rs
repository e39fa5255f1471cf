//! Checkpoint diffs (`cargo test -p caf-tests --test diff`): each section of `caf_core::diff`
//! ([`sections`]), the guarantees as properties — `diff(a, a)` is empty, a diff is empty exactly
//! when the checkpoints are equal, its changes applied turn one side into the other, its JSON
//! round-trips — and diffs across format versions ([`props`]), and `caf diff` ([`cli`]).

#![allow(clippy::unwrap_used)]

mod cli;
mod props;
mod sections;

use caf_core::diff::{Change, Op};
use caf_core::format::{CompletedStep, JsonObject, ToolCall, ToolStatus};
use caf_core::Checkpoint;
use caf_tests::gen::{at_ms, CheckpointBuilder};
use serde_json::{json, Value};

// ---- helpers ---------------------------------------------------------------------------------

/// A checkpoint with two thoughts, a completed call and two variables, at step 2.
pub(crate) fn base() -> CheckpointBuilder {
    CheckpointBuilder::new("ckpt_a")
        .execution("exec_1")
        .step(2)
        .tokens(100)
        .thought("reasoning", "first")
        .thought("observation", "second")
        .tool_call("search", json!({"q": "caf"}), json!(["r1"]))
        .variable("step", json!(2))
        .variable("nested", json!({"a": {"b": [1, 2, 3]}}))
}

/// The path and operation of each change.
pub(crate) fn paths(changes: &[Change]) -> Vec<(&str, Op)> {
    changes.iter().map(|c| (c.path.as_str(), c.op)).collect()
}

/// A running call without a result.
pub(crate) fn pending_call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        tool_id: "read_file".into(),
        args: json!({"path": "a.txt"}),
        status: ToolStatus::Running,
        result: None,
        success: None,
        error: None,
        started_at: Some(at_ms(1)),
        completed_at: None,
        duration_ms: None,
        extensions: JsonObject::new(),
    }
}

/// A completed plan step.
pub(crate) fn step(name: &str, ms: i64) -> CompletedStep {
    CompletedStep {
        name: name.into(),
        result: None,
        duration_ms: None,
        completed_at: at_ms(ms),
    }
}

/// Applies changes (paths relative to `v`) to `v`: replacements and additions in order, then
/// removals last to first (so that array indices stay valid).
pub(crate) fn apply(mut v: Value, changes: &[Change]) -> Value {
    fn split(path: &str) -> (String, String) {
        let i = path.rfind('/').unwrap();
        let token = path[i + 1..].replace("~1", "/").replace("~0", "~");
        (path[..i].to_string(), token)
    }
    for c in changes.iter().filter(|c| c.op != Op::Removed) {
        let new = c.new.clone().unwrap();
        if c.path.is_empty() {
            v = new;
            continue;
        }
        let (parent, token) = split(&c.path);
        match v.pointer_mut(&parent).unwrap() {
            Value::Object(m) => {
                m.insert(token, new);
            }
            Value::Array(a) => {
                let i: usize = token.parse().unwrap();
                if i == a.len() {
                    assert_eq!(c.op, Op::Added, "{c:?}");
                    a.push(new);
                } else {
                    a[i] = new;
                }
            }
            other => panic!("{} is not a container: {other}", c.path),
        }
    }
    for c in changes.iter().rev().filter(|c| c.op == Op::Removed) {
        let (parent, token) = split(&c.path);
        match v.pointer_mut(&parent).unwrap() {
            Value::Object(m) => assert!(m.remove(&token).is_some()),
            Value::Array(a) => {
                let i: usize = token.parse().unwrap();
                assert_eq!(i + 1, a.len(), "removals are trailing: {c:?}");
                a.pop();
            }
            other => panic!("{} is not a container: {other}", c.path),
        }
    }
    v
}

/// The whole context as one JSON object (its empty lists included).
pub(crate) fn context_json(c: &Checkpoint) -> Value {
    let x = &c.snapshot.context;
    json!({"variables": x.variables, "state": x.state, "history": x.history,
           "messages": x.messages, "memory": x.memory})
}

/// Whether `a` and `b` are equal but for their ids.
pub(crate) fn same_but_id(a: &Checkpoint, b: &Checkpoint) -> bool {
    let mut b = b.clone();
    b.id = a.id.clone();
    *a == b
}
