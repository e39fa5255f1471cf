//! Each section of a diff, on hand-built checkpoints.

use super::*;
use caf_core::{diff, CheckpointDiff, CheckpointReason};

#[test]
fn identical_checkpoints_have_an_empty_diff() {
    let a = base().build();
    let d = diff(&a, &a);
    assert!(d.is_empty(), "{d:#?}");
    let b = base()
        .with(|c| c.id = caf_tests::gen::ckpt_id("ckpt_b"))
        .build();
    let d = diff(&a, &b);
    assert!(d.is_empty());
    assert_eq!((d.from.as_str(), d.to.as_str()), ("ckpt_a", "ckpt_b"));
}

#[test]
fn thoughts_added_removed_and_changed_by_id() {
    let a = base().build();
    let b = base()
        .thought("action", "third")
        .with(|c| {
            let ts = &mut c.snapshot.thought_chain.thoughts;
            ts.remove(0); // th_0001 goes
            std::sync::Arc::make_mut(&mut ts[0]).content = "second, revised".into(); // th_0002
            std::sync::Arc::make_mut(&mut ts[0]).confidence = Some(0.9);
            std::sync::Arc::make_mut(&mut ts[0])
                .metadata
                .insert("model".into(), json!("m1"));
            std::sync::Arc::make_mut(&mut ts[1]).id = "th_new".into();
        })
        .build();
    let d = diff(&a, &b);
    assert_eq!(d.thoughts_added.len(), 1);
    assert_eq!(d.thoughts_added[0].id, "th_new");
    assert_eq!(d.thoughts_added[0].content, "third");
    assert_eq!(d.thoughts_removed.len(), 1);
    assert_eq!(d.thoughts_removed[0].id, "th_0001");
    assert_eq!(d.thoughts_changed.len(), 1);
    let ch = &d.thoughts_changed[0];
    assert_eq!(ch.id, "th_0002");
    assert_eq!(
        paths(&ch.changes),
        vec![
            ("/confidence", Op::Changed),
            ("/content", Op::Changed),
            ("/metadata", Op::Added)
        ]
    );
    assert_eq!(ch.changes[1].old, Some(json!("second")));
    assert_eq!(ch.changes[1].new, Some(json!("second, revised")));
    assert_eq!(ch.changes[1].text_diff, None, "short text has no line diff");
    // Moving thoughts around is not a change: they are matched by id.
    let swapped = base()
        .with(|c| c.snapshot.thought_chain.thoughts.reverse())
        .build();
    assert!(diff(&a, &swapped).thoughts_changed.is_empty());
}

#[test]
fn long_text_gets_a_unified_line_diff() {
    let old = "line one\nline two\nline three\nline four\n";
    let new = "line one\nline 2\nline three\nline four\nline five\n";
    let a = base()
        .with(|c| {
            std::sync::Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).content = old.into()
        })
        .variable("report", json!(old))
        .build();
    let b = base()
        .with(|c| {
            std::sync::Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).content = new.into()
        })
        .variable("report", json!(new))
        .build();
    let d = diff(&a, &b);
    let t = d.thoughts_changed[0].changes[0].text_diff.clone().unwrap();
    assert!(t.contains("@@ -1,4 +1,5 @@"), "{t}");
    assert!(t.contains("-line two\n+line 2\n"), "{t}");
    assert!(t.contains("+line five\n"), "{t}");
    let v = d
        .context_changes
        .iter()
        .find(|c| c.path == "/variables/report");
    assert_eq!(v.unwrap().text_diff.as_deref(), Some(t.as_str()));
}

#[test]
fn tool_calls_added_completed_and_changed() {
    let a = base()
        .with(|c| {
            let calls = &mut c.snapshot.tool_state.calls;
            calls.push(pending_call("call_run").into());
            calls.push(pending_call("call_fail").into());
            calls.push(pending_call("call_gone").into());
        })
        .build();
    let b = base()
        .tool_call("http_get", json!({"url": "x"}), json!("page"))
        .with(|c| {
            let calls = &mut c.snapshot.tool_state.calls;
            std::sync::Arc::make_mut(&mut calls[0]).args = json!({"q": "caf", "n": 2}); // call_0001: args edited
            let mut done = pending_call("call_run");
            done.status = ToolStatus::Completed;
            done.result = Some(json!({"text": "hello"}));
            done.success = Some(true);
            done.completed_at = Some(at_ms(5));
            let mut failed = pending_call("call_fail");
            failed.status = ToolStatus::Failed;
            failed.error = Some("no such file".into());
            failed.success = Some(false);
            calls.insert(1, failed.into());
            calls.insert(1, done.into());
        })
        .build();
    let d = diff(&a, &b);
    assert_eq!(d.tool_calls_added.len(), 1);
    assert_eq!(d.tool_calls_added[0].tool_id, "http_get");
    let done: Vec<_> = d
        .tool_calls_completed
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(done, ["call_run", "call_fail"]);
    let run = &d.tool_calls_completed[0];
    assert_eq!(
        (run.status.from, run.status.to),
        (ToolStatus::Running, ToolStatus::Completed)
    );
    assert_eq!(run.result, Some(json!({"text": "hello"})));
    assert!(run
        .changes
        .iter()
        .any(|c| c.path == "/result" && c.op == Op::Added));
    assert_eq!(
        d.tool_calls_completed[1].error.as_deref(),
        Some("no such file")
    );
    let changed: Vec<_> = d
        .tool_calls_changed
        .iter()
        .map(|c| (c.id.as_str(), c.op))
        .collect();
    assert_eq!(
        changed,
        [("call_0001", Op::Changed), ("call_gone", Op::Removed)]
    );
    assert_eq!(
        paths(&d.tool_calls_changed[0].changes),
        [("/args/n", Op::Added)]
    );
    let gone = &d.tool_calls_changed[1].changes[0];
    assert_eq!((gone.path.as_str(), gone.op), ("", Op::Removed));
    assert_eq!(gone.old.as_ref().unwrap()["id"], json!("call_gone"));
}

#[test]
fn a_result_that_appears_is_a_completion_even_without_a_status_change() {
    let a = base()
        .with(|c| std::sync::Arc::make_mut(&mut c.snapshot.tool_state.calls[0]).result = None)
        .build();
    let b = base()
        .with(|c| {
            std::sync::Arc::make_mut(&mut c.snapshot.tool_state.calls[0]).result = Some(Value::Null)
        })
        .build();
    let d = diff(&a, &b);
    assert_eq!(d.tool_calls_completed.len(), 1);
    assert_eq!(d.tool_calls_completed[0].result, Some(Value::Null));
    // The JSON keeps a null result apart from no result.
    let back: CheckpointDiff = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!(back, d);
}

#[test]
fn context_changes_are_json_pointers_into_nested_values() {
    let a = base()
        .with(|c| {
            let x = &mut c.snapshot.context;
            x.state.insert("a".into(), json!({"b": [0, 1], "c/d~": 1}));
            x.history = vec![json!("h0"), json!("h1"), json!("h2")];
            x.messages = vec![json!({"role": "user", "content": "hi"})];
        })
        .variable("gone", json!(true))
        .build();
    let b = base()
        .with(|c| {
            let x = &mut c.snapshot.context;
            x.state
                .insert("a".into(), json!({"b": [5, 1, 2], "c/d~": 2}));
            x.history = vec![json!("h0"), json!("h1"), json!("h2"), json!("h3")];
            x.messages = vec![
                json!({"role": "user", "content": "hello"}),
                json!({"role": "assistant", "content": "hi"}),
            ];
        })
        .variable("step", json!(3))
        .variable("nested", json!({"a": {"b": [1, 2]}}))
        .variable("new", json!(null))
        .build();
    let d = diff(&a, &b);
    assert_eq!(
        paths(&d.context_changes),
        vec![
            ("/variables/gone", Op::Removed),
            ("/variables/nested/a/b/2", Op::Removed),
            ("/variables/step", Op::Changed),
            ("/variables/new", Op::Added),
            ("/state/a/b/0", Op::Changed),
            ("/state/a/b/2", Op::Added),
            ("/state/a/c~1d~0", Op::Changed),
            ("/history/3", Op::Added),
            ("/messages/0/content", Op::Changed),
            ("/messages/1", Op::Added),
        ]
    );
    let step = &d.context_changes[2];
    assert_eq!(
        (step.old.clone(), step.new.clone()),
        (Some(json!(2)), Some(json!(3)))
    );
    let new = &d.context_changes[3];
    assert_eq!(
        (new.old.clone(), new.new.clone()),
        (None, Some(Value::Null))
    );
    assert_eq!(
        apply(context_json(&a), &d.context_changes),
        context_json(&b)
    );
}

#[test]
fn progress_delta_reports_steps_totals_and_the_plan() {
    let a = base()
        .with(|c| {
            let p = &mut c.snapshot.progress;
            p.total_steps = Some(5);
            p.completed_steps = vec![step("plan", 1), step("search", 2)];
            p.pending_steps = vec!["read".into(), "write".into(), "test".into()];
        })
        .build();
    let b = base()
        .step(4)
        .with(|c| {
            let p = &mut c.snapshot.progress;
            p.total_steps = Some(6);
            p.iterations_completed = 1;
            p.completed_steps = vec![step("plan", 1), step("search", 2), step("read", 3)];
            p.completed_steps.push(step("write", 4));
            p.pending_steps = vec!["test".into(), "ship".into()];
        })
        .build();
    let d = diff(&a, &b);
    let p = &d.progress;
    assert_eq!(
        (p.step_number.from, p.step_number.to, p.step_number.delta),
        (2, 4, 2)
    );
    assert_eq!((p.total_steps.from, p.total_steps.to), (Some(5), Some(6)));
    assert_eq!(p.iterations_completed.delta, 1);
    let names: Vec<_> = p.steps_completed.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["read", "write"]);
    assert!(p.steps_reverted.is_empty());
    let pending = p.pending_steps.as_ref().unwrap();
    assert_eq!(pending.removed, ["read", "write"]);
    assert_eq!(pending.added, ["ship"]);
    assert_eq!(pending.to, ["test", "ship"]);
    // The metadata copy of the step number is not reported twice.
    assert!(d
        .metadata
        .changes
        .iter()
        .all(|c| c.path != "/metadata/step_number"));
    // Backwards, the steps are reverted.
    let back = diff(&b, &a);
    assert_eq!(back.progress.steps_reverted.len(), 2);
    assert_eq!(back.progress.step_number.delta, -2);
}

#[test]
fn metadata_delta_reports_cost_reason_and_other_fields() {
    let a = base().at_ms(1000).build();
    let b = base()
        .at_ms(4000)
        .tokens(350)
        .reason(CheckpointReason::StepCompleted)
        .name("after-search")
        .label("good")
        .parent("ckpt_a")
        .with(|c| {
            c.metadata.duration_ms = 3000;
            c.snapshot
                .tool_state
                .results
                .insert("search".into(), json!(["r2"]));
        })
        .build();
    let d = diff(&a, &b);
    let m = &d.metadata;
    assert_eq!(
        (m.tokens_used.from, m.tokens_used.to, m.tokens_used.delta),
        (100, 350, 250)
    );
    assert_eq!(
        (m.duration_ms.from, m.duration_ms.to, m.duration_ms.delta),
        (0, 3000, 3000)
    );
    assert_eq!(m.reason.from, CheckpointReason::Manual);
    assert_eq!(m.reason.to, CheckpointReason::StepCompleted);
    assert_eq!(
        paths(&m.changes),
        vec![
            ("/parent_id", Op::Added),
            ("/timestamp", Op::Changed),
            ("/metadata/labels", Op::Added),
            ("/metadata/name", Op::Added),
            ("/snapshot/tool_state/results/search/0", Op::Changed),
        ]
    );
    assert!(!m.is_empty() && d.progress.is_empty() && d.context_changes.is_empty());
}

#[test]
fn json_has_exactly_the_documented_top_level_keys_and_round_trips() {
    let a = base().build();
    let b = base()
        .thought("action", "x")
        .variable("step", json!(3))
        .build();
    let d = diff(&a, &b);
    let v = serde_json::to_value(&d).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "from",
        "to",
        "thoughts_added",
        "thoughts_removed",
        "thoughts_changed",
        "tool_calls_added",
        "tool_calls_completed",
        "tool_calls_changed",
        "context_changes",
        "progress",
        "metadata",
    ];
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys_sorted, expected);
    assert_eq!(
        v["context_changes"][0],
        json!({"path": "/variables/step", "op": "changed", "old": 2, "new": 3})
    );
    assert_eq!(
        v["progress"]["step_number"],
        json!({"from": 2, "to": 2, "delta": 0})
    );
    let back: CheckpointDiff = serde_json::from_value(v).unwrap();
    assert_eq!(back, d);
}
