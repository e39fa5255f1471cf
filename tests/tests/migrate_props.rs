//! Property tests of the 0.0.1 migration (through 1.0.0 to the current version): for arbitrary
//! documents of either 0.0.1 dialect, what caf makes of them validates against the newest schema (checked with `jsonschema`
//! directly), survives save/load unchanged, and keeps every unknown field.

#![allow(clippy::unwrap_used)]

use caf_core::format::{decode, decode_value, encode, Limits};
use caf_tests::gen::{arb_json, arb_nonempty_text, arb_object, arb_text, arb_word};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::OnceLock;

fn validator(version: &str) -> &'static jsonschema::Validator {
    static V1: OnceLock<jsonschema::Validator> = OnceLock::new();
    static V0: OnceLock<jsonschema::Validator> = OnceLock::new();
    let (cell, file) = match version {
        "1.1.0" => (&V1, "checkpoint-1.1.0.schema.json"),
        _ => (&V0, "checkpoint-0.0.1.schema.json"),
    };
    cell.get_or_init(|| {
        let path = format!("{}/../schemas/{file}", env!("CARGO_MANIFEST_DIR"));
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    })
}

fn errors(version: &str, doc: &Value) -> Vec<String> {
    validator(version)
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn ms() -> impl Strategy<Value = i64> {
    0i64..4_102_444_800_000 // 1970 .. 2100
}

fn id() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,12}_[a-z0-9]{1,9}"
}

/// An unknown field name that neither dialect defines.
fn extra() -> impl Strategy<Value = (String, Value)> {
    ("x_[a-z]{1,8}", arb_json())
}

const TS_REASONS: [&str; 7] = [
    "step_complete",
    "manual",
    "low_confidence",
    "tool_error",
    "auto",
    "decision",
    "branch",
];
const TS_TYPES: [&str; 8] = [
    "planning",
    "reasoning",
    "tool_selection",
    "tool_execution",
    "reflection",
    "decision",
    "observation",
    "correction",
];
const TS_STATUS: [&str; 5] = ["pending", "running", "completed", "failed", "cancelled"];

fn seed_doc() -> impl Strategy<Value = Value> {
    let thought = (
        id(),
        arb_word(),
        arb_text(40),
        proptest::option::of(0.0f64..=1.0),
        ms(),
    )
        .prop_map(|(id, t, c, conf, at)| {
            let mut v = json!({"id": id, "type": t, "content": c, "created_at": at});
            if let Some(conf) = conf {
                v["confidence"] = json!(conf);
            }
            v
        });
    let call = (
        id(),
        "[a-z_]{1,10}",
        arb_object(),
        proptest::option::of(arb_json()),
        proptest::option::of(any::<bool>()),
        ms(),
        proptest::option::of(0i64..100_000),
    )
        .prop_map(|(id, tool, args, result, success, at, took)| {
            let mut v = json!({"id": id, "tool_id": tool, "args": args, "started_at": at});
            if let Some(r) = result {
                v["result"] = r;
            }
            if let Some(s) = success {
                v["success"] = json!(s);
            }
            if let Some(t) = took {
                v["completed_at"] = json!(at + t);
            }
            v
        });
    (
        (id(), id(), arb_nonempty_text(20), ms()),
        proptest::collection::vec(thought, 0..4),
        proptest::collection::vec(call, 0..4),
        (arb_object(), arb_object(), proptest::collection::vec(arb_json(), 0..3)),
        (0u64..1000, 0u64..1_000_000, 0.0f64..1e7, arb_word()),
        proptest::option::of(extra()),
    )
        .prop_map(|((cid, exec, agent, at), thoughts, calls, (vars, state, history), (step, tokens, dur, reason), x)| {
            let mut doc = json!({
                "version": "0.0.1", "id": cid, "timestamp": at, "execution_id": exec, "agent_id": agent,
                "snapshot": {
                    "thought_chain": thoughts.clone(),
                    "context": {"variables": vars, "state": state, "history": history},
                    "tool_state": {"calls": calls.clone(), "results": {}},
                    "progress": {"step_number": step, "total_thoughts": thoughts.len(), "total_tool_calls": calls.len()}
                },
                "metadata": {"step_number": step, "tokens_used": tokens, "duration_ms": dur, "checkpoint_reason": reason}
            });
            if let Some((k, v)) = x {
                doc[k] = v;
            }
            doc
        })
}

fn ts_doc() -> impl Strategy<Value = Value> {
    let step = (id(), 0..TS_TYPES.len(), arb_text(40), proptest::option::of(arb_text(20)), 0.0f64..=1.0, ms(), proptest::option::of(extra()))
        .prop_map(|(id, t, c, r, conf, at, x)| {
            let mut v = json!({"id": id, "type": TS_TYPES[t], "content": c, "confidence": conf, "children": [], "timestamp": at});
            if let Some(r) = r {
                v["reasoning"] = json!(r);
            }
            if let Some((k, val)) = x {
                v[k] = val;
            }
            v
        });
    let call = (id(), "[a-z_]{1,10}", arb_object(), 0..TS_STATUS.len(), proptest::option::of(arb_json()), proptest::option::of(0.0f64..10_000.0), ms())
        .prop_map(|(id, tool, args, s, result, dur, at)| {
            let mut v = json!({"id": id, "tool_id": tool, "arguments": args, "status": TS_STATUS[s], "timestamp": at});
            if let Some(r) = result {
                v["result"] = r;
            }
            if let Some(d) = dur {
                v["duration_ms"] = json!(d);
            }
            v
        });
    (
        (id(), id(), "[a-z-]{1,12}", ms()),
        proptest::collection::vec(step, 0..4),
        proptest::collection::vec(call, 0..4),
        proptest::collection::vec(id(), 0..3),
        (arb_object(), proptest::collection::vec(arb_json(), 0..3)),
        (0u64..1000, 0u64..1_000_000, 0.0f64..1e7, 0..TS_REASONS.len()),
        (proptest::option::of((id(), any::<bool>(), proptest::option::of(arb_text(20)))), proptest::option::of(arb_text(20))),
    )
        .prop_map(|((cid, exec, agent, at), steps, calls, pending, (vars, messages), (step, tokens, dur, reason), (parent, name))| {
            let (completed, failed): (Vec<Value>, Vec<Value>) = calls.into_iter().partition(|c| c["status"] == "completed");
            let mut doc = json!({
                "version": "0.0.1", "id": cid, "timestamp": at, "execution_id": exec, "agent_id": agent,
                "snapshot": {
                    "thought_chain": {"steps": steps},
                    "context": {"messages": messages.into_iter().map(|m| json!({"role": "user", "content": m.to_string()})).collect::<Vec<_>>(), "variables": vars},
                    "tool_state": {"pending": pending, "running": [], "completed": completed, "failed": failed},
                    "progress": {"step_number": step, "iterations_completed": 0, "tokens_used": tokens, "duration_ms": dur}
                },
                "metadata": {"step_number": step, "tokens_used": tokens, "duration_ms": dur, "checkpoint_reason": TS_REASONS[reason], "agent_id": agent}
            });
            if let Some((p, is_branch, why)) = parent {
                doc["parent"] = json!({"checkpoint_id": p, "is_branch": is_branch});
                if let Some(w) = why {
                    doc["parent"]["branch_reason"] = json!(w);
                }
            }
            if let Some(n) = name {
                doc["name"] = json!(n);
            }
            doc
        })
}

fn check_migration(doc: Value) -> Result<(), TestCaseError> {
    prop_assert!(
        errors("0.0.1", &doc).is_empty(),
        "generator made an invalid 0.0.1 doc: {:?}",
        errors("0.0.1", &doc)
    );
    let decoded =
        decode_value(doc.clone()).map_err(|e| TestCaseError::fail(format!("{e}\n{doc:#}")))?;
    prop_assert!(decoded.was_migrated());
    let bytes = encode(&decoded.checkpoint).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let written: Value = serde_json::from_slice(&bytes).unwrap();
    let errs = errors(caf_core::CURRENT_VERSION, &written);
    prop_assert!(
        errs.is_empty(),
        "migrated document breaks the 1.0.0 schema: {errs:?}"
    );
    let again =
        decode(&bytes, &Limits::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&again.checkpoint, &decoded.checkpoint);
    // Every unknown top-level field is kept, verbatim, in extensions.
    for (k, v) in doc.as_object().unwrap() {
        if k.starts_with("x_") {
            prop_assert_eq!(decoded.checkpoint.extensions.get(k), Some(v));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn seed_dialect_migrates_to_a_valid_current_checkpoint(doc in seed_doc()) {
        check_migration(doc)?;
    }

    #[test]
    fn typescript_dialect_migrates_to_a_valid_current_checkpoint(doc in ts_doc()) {
        check_migration(doc)?;
    }
}
