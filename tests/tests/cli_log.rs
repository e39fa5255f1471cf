//! `caf log`: history newest first, or drawn as a graph (`--graph`), with heads, the latest
//! checkpoint of each execution, the children of branch points and gaps left by missing parents.
//!
//! The histories are written with the library (a [`CheckpointManager`] on a [`FileStore`] in
//! the sandbox's store, with a simulated clock and chosen ids), then read with the real binary
//! through the harness in [`caf_tests::cli`].

#![allow(clippy::unwrap_used)]

use caf_core::clock::{utc, SimulatedClock};
use caf_core::{
    CheckpointId, CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore,
    ExecutionId, FileStore, ForkOptions, RuntimeState,
};
use caf_tests::cli::Sandbox;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Writing a history
// ---------------------------------------------------------------------------------------------

/// Writes checkpoints into a sandbox's store and remembers a short name for each id. Ids share a
/// long prefix (`ckpt_019b8dd0-000N-…`, like UUIDv7s taken in one millisecond), so `caf log`
/// has to show more than the minimum 8 characters to tell them apart. The clock moves one
/// second before each checkpoint, from 2026-01-05 09:00:00 UTC.
struct History {
    manager: CheckpointManager<FileStore>,
    clock: Arc<SimulatedClock>,
    /// Full id → name.
    names: BTreeMap<String, String>,
    /// Name → full id.
    ids: BTreeMap<String, CheckpointId>,
}

impl History {
    fn new(sb: &Sandbox) -> Self {
        let clock = Arc::new(SimulatedClock::starting_at(
            utc(2026, 1, 5, 9, 0, 0).unwrap(),
        ));
        let n = Arc::new(AtomicU32::new(0));
        let manager = CheckpointManager::new(FileStore::open(sb.store()).unwrap())
            .with_clock(clock.clone())
            .with_id_source(move || {
                let n = n.fetch_add(1, Ordering::SeqCst) + 1;
                CheckpointId::new(format!("ckpt_019b8dd0-{n:04x}-7000-8000-00000000000{n:x}"))
                    .unwrap()
            });
        Self {
            manager,
            clock,
            names: BTreeMap::new(),
            ids: BTreeMap::new(),
        }
    }

    /// A new execution's state.
    fn start(&self, execution: &str) -> RuntimeState {
        RuntimeState::with_clock(
            "agent",
            ExecutionId::new(execution).unwrap(),
            self.clock.clone(),
        )
    }

    fn remember(&mut self, name: &str, id: CheckpointId) {
        self.names.insert(id.to_string(), name.to_string());
        self.ids.insert(name.to_string(), id);
    }

    /// Completes a step of `state` and checkpoints it as `name`.
    fn step(&mut self, state: &mut RuntimeState, name: &str, options: CheckpointOptions) {
        self.clock.advance_ms(1000);
        state.complete_step(None);
        let c = self.manager.checkpoint(state, options).unwrap();
        self.remember(name, c.id);
    }

    /// A step with reason `step_completed`.
    fn plain_step(&mut self, state: &mut RuntimeState, name: &str) {
        self.step(
            state,
            name,
            CheckpointOptions::new(CheckpointReason::StepCompleted),
        );
    }

    /// Forks checkpoint `from` as `name` and returns the branch's state.
    fn fork(&mut self, from: &str, name: &str, options: ForkOptions) -> RuntimeState {
        self.clock.advance_ms(1000);
        let c = self.manager.fork(&self.ids[from], options).unwrap();
        let state = self.manager.restore(&c.id).unwrap().state;
        self.remember(name, c.id);
        state
    }

    /// The full id of `name`.
    fn id(&self, name: &str) -> String {
        self.ids[name].to_string()
    }

    /// `text` with every checkpoint id (full, or a prefix that names one checkpoint of the store
    /// and has at least 8 characters after `ckpt_`) replaced by its name.
    fn named(&self, sb: &Sandbox, text: &str) -> String {
        let stored = sb.list_ids();
        let is_id_char = |c: char| c.is_ascii_alphanumeric() || "_-.:@".contains(c);
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("ckpt_") {
            out.push_str(&rest[..start]);
            let len = rest[start..]
                .find(|c: char| !is_id_char(c))
                .unwrap_or(rest.len() - start);
            let token = &rest[start..start + len];
            let name = match self.names.get(token) {
                Some(name) => name,
                None => {
                    let matches: Vec<&String> =
                        stored.iter().filter(|id| id.starts_with(token)).collect();
                    assert_eq!(matches.len(), 1, "{token:?} names one checkpoint in {text}");
                    assert!(token.len() >= 13, "{token:?} is too short in {text}");
                    &self.names[matches[0]]
                }
            };
            out.push_str(name);
            rest = &rest[start + len..];
        }
        out.push_str(rest);
        out
    }
}

/// The history most tests read, in three executions:
///
/// - `exec_main`: a1 - a2 - a3 - a4 (completed, named "final"); a branch from a2: b1 (a fork
///   named "try-b") - b2 (labelled "keep");
/// - `exec_side`: f1 (a fork of a3 into this execution, named "side") - f2;
/// - `exec_gaps`: g1 - g2 - g3, then g1 deleted: g2's parent is not in the store.
///
/// In time order: a1 a2 a3 b1 b2 a4 f1 f2 g1 g2 g3, one second apart.
fn forked(sb: &Sandbox) -> History {
    let mut h = History::new(sb);
    let mut main = h.start("exec_main");
    for name in ["a1", "a2", "a3"] {
        h.plain_step(&mut main, name);
    }
    let mut b = h.fork(
        "a2",
        "b1",
        ForkOptions {
            name: Some("try-b".into()),
            ..ForkOptions::default()
        },
    );
    h.step(
        &mut b,
        "b2",
        CheckpointOptions::new(CheckpointReason::StepCompleted).label("keep"),
    );
    h.step(
        &mut main,
        "a4",
        CheckpointOptions::new(CheckpointReason::Completed).named("final"),
    );
    let mut side = h.fork(
        "a3",
        "f1",
        ForkOptions {
            name: Some("side".into()),
            execution: Some(ExecutionId::new("exec_side").unwrap()),
            ..ForkOptions::default()
        },
    );
    h.plain_step(&mut side, "f2");
    let mut gaps = h.start("exec_gaps");
    for name in ["g1", "g2", "g3"] {
        h.plain_step(&mut gaps, name);
    }
    assert!(h.manager.store().delete(&h.ids["g1"]).unwrap());
    h
}

/// `caf log ARGS…` (which must succeed), with ids replaced by names.
fn log(sb: &Sandbox, h: &History, args: &[&str]) -> String {
    let mut all = vec!["log"];
    all.extend_from_slice(args);
    let out = sb.caf(&all).ok();
    assert!(out.err().is_empty(), "{}", out.describe());
    h.named(sb, &out.out())
}

/// `caf --json log ARGS…` as an array of objects, keyed by checkpoint name, in order.
fn log_json(sb: &Sandbox, h: &History, args: &[&str]) -> Vec<(String, Value)> {
    let mut all = vec!["--json", "log"];
    all.extend_from_slice(args);
    match sb.caf(&all).ok().json() {
        Value::Array(items) => items
            .into_iter()
            .map(|v| (h.names[v["id"].as_str().unwrap()].clone(), v))
            .collect(),
        other => panic!("caf --json log is not an array: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The graph
// ---------------------------------------------------------------------------------------------

#[test]
fn graph_draws_branches_heads_latest_children_and_gaps() {
    let sb = Sandbox::new();
    let h = forked(&sb);
    assert_eq!(
        log(&sb, &h, &["--graph"]),
        "\
* g3 (head, latest) 2026-01-05 09:00:11  exec_gaps  step 3  step_completed
* g2 2026-01-05 09:00:10  exec_gaps  step 2  step_completed
    ⋮ parent g1 not in the store (pruned?)

* f2 (head, latest) 2026-01-05 09:00:08  exec_side  step 4  step_completed
* f1 2026-01-05 09:00:07  exec_side  step 3  branch  side
| * a4 (head, latest) 2026-01-05 09:00:06  exec_main  step 4  completed  final
|/
* a3 2026-01-05 09:00:03  exec_main  step 3  step_completed
|   children: f1, a4
| * b2 (head) 2026-01-05 09:00:05  exec_main  step 3  step_completed [keep]
| * b1 2026-01-05 09:00:04  exec_main  step 2  branch  try-b
|/
* a2 2026-01-05 09:00:02  exec_main  step 2  step_completed
|   children: b1, a3
* a1 2026-01-05 09:00:01  exec_main  step 1  step_completed
"
    );
    // The missing parent is named in full: it is not in the store to be told apart from.
    let raw = sb.caf(&["log", "--graph"]).ok().out();
    let gap = format!("    ⋮ parent {} not in the store (pruned?)\n", h.id("g1"));
    assert!(raw.contains(&gap), "{raw}");
}

#[test]
fn ids_are_the_shortest_unique_prefixes() {
    let sb = Sandbox::new();
    let h = forked(&sb);
    let out = sb.caf(&["log", "-e", "exec_side"]).ok().out();
    // Every id starts `ckpt_019b8dd0-000`: one more character tells them apart.
    assert!(
        out.starts_with("ckpt_019b8dd0-0008 (head, latest) "),
        "{out}"
    );
    assert_eq!(h.id("f2"), "ckpt_019b8dd0-0008-7000-8000-000000000008");
}

#[test]
fn one_execution_keeps_the_relations_of_the_whole_store() {
    let sb = Sandbox::new();
    let h = forked(&sb);
    // a3's child f1 is in exec_side: a3 is still a branch point and no head. One execution
    // shown: no execution column.
    assert_eq!(
        log(&sb, &h, &["--graph", "--execution", "exec_main"]),
        "\
* a4 (head, latest) 2026-01-05 09:00:06  step 4  completed  final
* a3 2026-01-05 09:00:03  step 3  step_completed
|   children: f1, a4
| * b2 (head) 2026-01-05 09:00:05  step 3  step_completed [keep]
| * b1 2026-01-05 09:00:04  step 2  branch  try-b
|/
* a2 2026-01-05 09:00:02  step 2  step_completed
|   children: b1, a3
* a1 2026-01-05 09:00:01  step 1  step_completed
"
    );
    // f1's parent is in the store, in another execution: named, not reported missing.
    assert_eq!(
        log(&sb, &h, &["-e", "exec_side"]),
        "\
f2 (head, latest) 2026-01-05 09:00:08  step 4  step_completed
f1 2026-01-05 09:00:07  step 3  branch  side
  parent a3 is in execution exec_main
"
    );
    assert_eq!(
        log(&sb, &h, &["-e", "exec_side", "--graph"]),
        "\
* f2 (head, latest) 2026-01-05 09:00:08  step 4  step_completed
* f1 2026-01-05 09:00:07  step 3  branch  side
    parent a3 is in execution exec_main
"
    );
}

#[test]
fn without_graph_the_list_is_newest_first_with_the_same_details() {
    let sb = Sandbox::new();
    let h = forked(&sb);
    assert_eq!(
        log(&sb, &h, &[]),
        "\
g3 (head, latest) 2026-01-05 09:00:11  exec_gaps  step 3  step_completed
g2 2026-01-05 09:00:10  exec_gaps  step 2  step_completed
  ⋮ parent g1 not in the store (pruned?)
f2 (head, latest) 2026-01-05 09:00:08  exec_side  step 4  step_completed
f1 2026-01-05 09:00:07  exec_side  step 3  branch  side
a4 (head, latest) 2026-01-05 09:00:06  exec_main  step 4  completed  final
b2 (head) 2026-01-05 09:00:05  exec_main  step 3  step_completed [keep]
b1 2026-01-05 09:00:04  exec_main  step 2  branch  try-b
a3 2026-01-05 09:00:03  exec_main  step 3  step_completed
  children: f1, a4
a2 2026-01-05 09:00:02  exec_main  step 2  step_completed
  children: b1, a3
a1 2026-01-05 09:00:01  exec_main  step 1  step_completed
"
    );
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

#[test]
fn json_has_relations_markers_and_with_graph_lanes() {
    let sb = Sandbox::new();
    let h = forked(&sb);
    let items = log_json(&sb, &h, &[]);
    let order: Vec<&str> = items.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        order,
        ["g3", "g2", "f2", "f1", "a4", "b2", "b1", "a3", "a2", "a1"]
    );
    let by_name: BTreeMap<&str, &Value> = items.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let a3 = by_name["a3"];
    assert_eq!(a3["id"], h.id("a3"));
    assert_eq!(a3["parent_id"], h.id("a2"));
    assert_eq!(a3["execution_id"], "exec_main");
    assert_eq!(a3["step_number"], 3);
    assert_eq!(a3["reason"], "step_completed");
    let time = a3["timestamp"].as_str().unwrap();
    assert!(
        time.starts_with("2026-01-05T09:00:03.") && time.ends_with('Z'),
        "{time}"
    );
    assert_eq!(a3["name"], Value::Null);
    assert_eq!(a3["labels"], serde_json::json!([]));
    assert_eq!(a3["children"], serde_json::json!([h.id("f1"), h.id("a4")]));
    assert!(a3.get("lane").is_none(), "{a3}");
    let b2 = by_name["b2"];
    assert_eq!(b2["labels"], serde_json::json!(["keep"]));
    assert_eq!(by_name["a4"]["name"], "final");
    assert_eq!(by_name["a1"]["parent_id"], Value::Null);
    // Every checkpoint has children listed (an empty list for a head), and the markers.
    let flags = |n: &str| {
        let v = by_name[n];
        (
            v["head"].as_bool().unwrap(),
            v["latest"].as_bool().unwrap(),
            v["parent_missing"].as_bool().unwrap(),
            v["children"].as_array().unwrap().len(),
        )
    };
    assert_eq!(flags("a4"), (true, true, false, 0));
    assert_eq!(flags("b2"), (true, false, false, 0));
    assert_eq!(flags("a2"), (false, false, false, 2));
    assert_eq!(flags("a1"), (false, false, false, 1));
    assert_eq!(flags("g3"), (true, true, false, 0));
    assert_eq!(flags("g2"), (false, false, true, 1));
    assert_eq!(by_name["g2"]["parent_id"], h.id("g1"));
    assert_eq!(flags("f1"), (false, false, false, 1));

    // With --graph: graph order (children before parents) and each row's lane.
    let rows: Vec<(String, u64)> = log_json(&sb, &h, &["--graph"])
        .into_iter()
        .map(|(n, v)| (n, v["lane"].as_u64().unwrap()))
        .collect();
    let expected = [
        ("g3", 0),
        ("g2", 0),
        ("f2", 0),
        ("f1", 0),
        ("a4", 1),
        ("a3", 0),
        ("b2", 1),
        ("b1", 1),
        ("a2", 0),
        ("a1", 0),
    ];
    assert_eq!(
        rows,
        expected
            .iter()
            .map(|(n, l)| (n.to_string(), *l))
            .collect::<Vec<_>>()
    );

    // --execution: only that execution, relations still from the whole store.
    let side = log_json(&sb, &h, &["-e", "exec_side"]);
    let names: Vec<&str> = side.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["f2", "f1"]);
    assert_eq!(side[1].1["parent_id"], h.id("a3"));
    assert_eq!(side[1].1["parent_missing"], false);
}

// ---------------------------------------------------------------------------------------------
// The demo, empty stores, unknown executions
// ---------------------------------------------------------------------------------------------

#[test]
fn demo_history_is_one_line_per_execution() {
    let sb = Sandbox::new();
    sb.demo(&["--executions", "2", "--steps", "3"]);
    let listed = sb.list(&[]);
    let out = sb.caf(&["log", "--graph"]).ok().out();
    let lines: Vec<&str> = out.lines().collect();
    // 4 checkpoints per execution (3 steps and the final one), and a blank between the two
    // unrelated lines of history.
    assert_eq!(lines.len(), 9, "{out}");
    assert_eq!(lines[4], "", "{out}");
    for (i, line) in lines.iter().enumerate().filter(|(i, _)| *i != 4) {
        assert!(line.starts_with("* ckpt_"), "line {i}: {out}");
        assert!(line.contains("  exec_"), "line {i}: {out}");
    }
    let heads: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("(head, latest)"))
        .collect();
    assert_eq!(heads.len(), 2, "{out}");
    assert!(
        heads.iter().all(|l| l.ends_with("completed  final [demo]")),
        "{out}"
    );
    assert!(
        !out.contains("(head)") && !out.contains("children"),
        "{out}"
    );

    // One execution: its 4 checkpoints, and no execution column.
    let exec = listed[0]["execution_id"].as_str().unwrap();
    let out = sb.caf(&["log", "--execution", exec]).ok().out();
    assert_eq!(out.lines().count(), 4, "{out}");
    assert!(!out.contains("exec_"), "{out}");
    assert!(out.lines().all(|l| l.starts_with("ckpt_")), "{out}");
}

#[test]
fn empty_store_and_unknown_execution() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.store()).unwrap();
    let out = sb.caf(&["log"]).ok();
    assert_eq!(
        out.out(),
        format!("no checkpoints in {}\n", sb.store_str()),
        "{}",
        out.describe()
    );
    sb.caf(&["log", "--graph"]).ok();
    assert_eq!(
        sb.caf(&["--json", "log"]).ok().json(),
        serde_json::json!([])
    );
    let out = sb.caf(&["log", "--execution", "exec_nope"]).fails(1);
    assert_eq!(
        out.errors(),
        vec![format!(
            "error: execution exec_nope has no checkpoints in {}",
            sb.store_str()
        )]
    );

    let h = forked(&sb);
    let out = sb.caf(&["--json", "log", "-e", "exec_nope"]).fails(1);
    assert!(out.stdout.is_empty(), "{}", out.describe());
    assert_eq!(log(&sb, &h, &["-e", "exec_gaps"]).lines().count(), 3);
    // No store at all: the usual error of commands that read one.
    let out = Sandbox::new().caf(&["log"]).fails(1);
    assert!(
        out.errors()[0].contains("no checkpoint directory"),
        "{}",
        out.describe()
    );
    sb.caf(&["log", "--frobnicate"]).fails(2);
}

#[test]
fn names_with_line_breaks_and_escapes_stay_on_their_line() {
    let sb = Sandbox::new();
    let mut h = History::new(&sb);
    let mut state = h.start("exec_main");
    h.step(
        &mut state,
        "a1",
        CheckpointOptions::new(CheckpointReason::Manual)
            .named("two\nlines \u{1b}[31mred")
            .label("x\ty"),
    );
    assert_eq!(
        log(&sb, &h, &[]),
        "a1 (head, latest) 2026-01-05 09:00:01  step 1  manual  two lines \\u{1b}[31mred [x y]\n"
    );
}
