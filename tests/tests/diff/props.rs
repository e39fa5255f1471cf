//! The guarantees of a diff as properties, and diffs across format versions.

use super::*;
use caf_core::format::{decode, Limits, Thought};
use caf_core::store::read_checkpoint_file;
use caf_core::{diff, CheckpointDiff};
use caf_tests::gen::arb_checkpoint;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

// ---- properties ------------------------------------------------------------------------------

/// `c` with one part replaced by the same part of `other`.
fn splice(c: &Checkpoint, other: &Checkpoint, part: usize) -> Checkpoint {
    let mut out = c.clone();
    let (s, o) = (&mut out.snapshot, &other.snapshot);
    match part {
        0 => s.thought_chain = o.thought_chain.clone(),
        1 => s.tool_state = o.tool_state.clone(),
        2 => s.context = o.context.clone(),
        3 => s.progress = o.progress.clone(),
        4 => out.metadata = other.metadata.clone(),
        5 => out.timestamp = other.timestamp,
        6 => out.extensions = other.extensions.clone(),
        7 => out.parent_id = other.parent_id.clone(),
        8 => s.thought_chain.thoughts.truncate(1),
        9 => {
            s.tool_state
                .calls
                .extend(o.tool_state.calls.iter().cloned());
        }
        _ => out = other.clone(),
    }
    out
}

fn thought_json(t: &Thought) -> Value {
    serde_json::to_value(t).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn diff_with_itself_is_empty(a in arb_checkpoint()) {
        let d = diff(&a, &a);
        prop_assert!(d.is_empty(), "{:#?}", d);
    }

    #[test]
    fn diff_is_empty_exactly_when_the_checkpoints_are_equal(
        a in arb_checkpoint(), other in arb_checkpoint(), part in 0usize..12,
    ) {
        let b = splice(&a, &other, part);
        let d = diff(&a, &b);
        prop_assert_eq!(d.is_empty(), same_but_id(&a, &b), "{:#?}", d);
        // The context changes, applied to a's context, give b's.
        prop_assert_eq!(apply(context_json(&a), &d.context_changes), context_json(&b));
        // Thought changes, applied to a's thought, give b's.
        for ch in &d.thoughts_changed {
            let old = a.snapshot.thought_chain.thoughts.iter().find(|t| t.id == ch.id).unwrap();
            let new = b.snapshot.thought_chain.thoughts.iter().find(|t| t.id == ch.id).unwrap();
            if a.snapshot.thought_chain.thoughts.iter().filter(|t| t.id == ch.id).count() == 1
                && b.snapshot.thought_chain.thoughts.iter().filter(|t| t.id == ch.id).count() == 1
            {
                prop_assert_eq!(apply(thought_json(old), &ch.changes), thought_json(new));
            }
        }
        // The JSON form round-trips.
        let text = serde_json::to_string(&d).unwrap();
        let back: CheckpointDiff = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, d);
    }
}

// ---- mixed format versions -------------------------------------------------------------------

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

#[test]
fn a_v0_file_and_its_migrated_golden_do_not_differ() {
    let old = read_checkpoint_file(&fixture("v0.0.1/ts-caf.json"), &Limits::default()).unwrap();
    assert_eq!(old.source_version, "0.0.1");
    let new =
        read_checkpoint_file(&fixture("v1.0.0/from-ts-caf.json"), &Limits::default()).unwrap();
    let d = diff(&old.checkpoint, &new.checkpoint);
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn a_modified_v0_file_diffs_against_the_v1_golden() {
    let mut raw: Value =
        serde_json::from_slice(&std::fs::read(fixture("v0.0.1/ts-caf.json")).unwrap()).unwrap();
    let snap = &mut raw["snapshot"];
    snap["context"]["variables"]["attempt"] = json!(3);
    let steps = snap["thought_chain"]["steps"].as_array_mut().unwrap();
    let first_id = steps[0]["id"].as_str().unwrap().to_string();
    steps[0]["content"] = json!("a different plan");
    let old = decode(&serde_json::to_vec(&raw).unwrap(), &Limits::default()).unwrap();
    assert!(old.was_migrated());
    let new =
        read_checkpoint_file(&fixture("v1.0.0/from-ts-caf.json"), &Limits::default()).unwrap();
    let d = diff(&old.checkpoint, &new.checkpoint);
    assert_eq!(
        paths(&d.context_changes),
        [("/variables/attempt", Op::Changed)]
    );
    assert_eq!(d.context_changes[0].old, Some(json!(3)));
    assert_eq!(d.thoughts_changed.len(), 1);
    assert_eq!(d.thoughts_changed[0].id, first_id);
    assert_eq!(
        paths(&d.thoughts_changed[0].changes),
        [("/content", Op::Changed)]
    );
    assert!(d.thoughts_added.is_empty() && d.tool_calls_changed.is_empty());
    assert!(d.metadata.is_empty() && d.progress.is_empty());
}
