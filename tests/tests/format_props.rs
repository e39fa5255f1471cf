//! Properties of the checkpoint format over arbitrary valid checkpoints: what caf writes
//! validates against the published JSON Schema (checked with `jsonschema` directly, not through
//! caf), decodes back equal, is deterministic, and a damaged byte is never silently accepted.
//! Plus: for checkpoints pushed out of bounds, `encode` either refuses or writes something that
//! loads back equal — never a file caf itself cannot read.

#![allow(clippy::unwrap_used)]

use caf_core::format::{decode, encode, Checkpoint, CheckpointReason, Limits};
use caf_core::Timestamp;
use caf_tests::gen::{arb_checkpoint, arb_text, MAX_MICROS};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use std::sync::OnceLock;

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../schemas/checkpoint-1.1.0.schema.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap()
    })
}

fn schema_errors(doc: &Value) -> Vec<String> {
    validator()
        .iter_errors(doc)
        .map(|e| format!("at {:?}: {e}", e.instance_path().to_string()))
        .collect()
}

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(64)
}

/// The region of the file holding the snapshot: from its key to the next top-level key.
fn snapshot_region(bytes: &[u8]) -> std::ops::Range<usize> {
    let text = std::str::from_utf8(bytes).unwrap();
    let start = text.find("\n  \"snapshot\": ").unwrap() + 1;
    let end = start + text[start..].find("\n  \"timestamp\": ").unwrap();
    start..end
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn what_caf_writes_validates_against_the_schema(c in arb_checkpoint()) {
        let bytes = encode(&c).map_err(|e| TestCaseError::fail(format!("encode refused a valid checkpoint: {e}")))?;
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let errors = schema_errors(&doc);
        prop_assert!(errors.is_empty(), "schema violations: {errors:#?}");
    }

    #[test]
    fn decode_inverts_encode(c in arb_checkpoint()) {
        let bytes = encode(&c).unwrap();
        let decoded = decode(&bytes, &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("decode failed: {e}")))?;
        prop_assert_eq!(decoded.source_version.as_str(), caf_core::CURRENT_VERSION);
        prop_assert!(!decoded.was_migrated());
        prop_assert_eq!(decoded.checkpoint, c);
    }

    /// The format's definition, built independently of the encoder (which writes a placeholder
    /// checksum and fills it in place): the document without `integrity`, pretty-printed with
    /// sorted keys and a trailing newline, hashed, and the `integrity` line inserted before
    /// `metadata`.
    #[test]
    fn encode_writes_the_canonical_text_and_its_checksum(c in arb_checkpoint()) {
        use caf_core::format::integrity::{digest, splice, write_canonical};
        let bytes = encode(&c).unwrap();
        let mut doc: Value = serde_json::from_slice(&bytes).unwrap();
        doc.as_object_mut().unwrap().remove("integrity").unwrap();
        let mut text = Vec::new();
        write_canonical(&mut text, &doc).unwrap();
        let sum = digest(&[&text]);
        let expected = splice(text, &sum).unwrap();
        prop_assert!(bytes == expected, "{}", String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn encode_is_deterministic(c in arb_checkpoint()) {
        let one = encode(&c).unwrap();
        let two = encode(&c.clone()).unwrap();
        prop_assert_eq!(&one, &two);
        prop_assert!(one.ends_with(b"}\n") && !one.ends_with(b"\n\n"), "one trailing newline");
        // Re-encoding what was decoded gives the same bytes too.
        let again = encode(&decode(&one, &Limits::default()).unwrap().checkpoint).unwrap();
        prop_assert_eq!(&one, &again);
    }

    #[test]
    fn a_damaged_snapshot_byte_never_loads_a_different_checkpoint(
        c in arb_checkpoint(),
        flips in proptest::collection::vec((any::<Index>(), 1u8..=255), 16),
    ) {
        let bytes = encode(&c).unwrap();
        let original: Value = serde_json::from_slice(&bytes).unwrap();
        let region = snapshot_region(&bytes);
        for (at, mask) in flips {
            let i = region.start + at.index(region.len());
            let mut damaged = bytes.clone();
            damaged[i] ^= mask;
            if let Ok(d) = decode(&damaged, &Limits::default()) {
                // Only a change of representation may pass (e.g. `\u001f` → `\u001F`, or one
                // whitespace for another): the document must be the very same.
                let reparsed: Value = serde_json::from_slice(&damaged).unwrap();
                prop_assert_eq!(
                    &reparsed, &original,
                    "byte {} ({:?} -> {:?}) changed the content yet decoded",
                    i, bytes[i] as char, damaged[i] as char
                );
                prop_assert_eq!(&d.checkpoint, &c);
            }
        }
    }
}

// ---- out-of-bounds checkpoints ---------------------------------------------------------------

/// One way of pushing a valid checkpoint towards (or past) the edges of the format.
#[derive(Debug, Clone)]
enum Push {
    Schema(String),
    Reason(String),
    CurrentThoughtId(String),
    LastCallId(String),
    ThoughtId(String),
    ThoughtKind(String),
    ThoughtParent(String),
    ThoughtChild(String),
    Confidence(f64),
    ToolId(String),
    CallId(String),
    Timestamp(i64),
    ThoughtCreatedAt(i64),
    CallStartedAt(i64),
    CallCompletedAt(i64),
    StepCompletedAt(i64),
    Label(String),
    Name(String),
    AgentId(String),
    Depth(usize),
    NullResults,
}

fn arb_micros() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(-1),
        Just(MAX_MICROS + 1),
        Just(-62_167_219_200_000_000), // 0000-01-01
        Just(-62_167_219_200_000_001),
        any::<i64>(),
    ]
}

fn arb_edge_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        arb_text(8),
        (1usize..=3, 250usize..=260).prop_map(|(w, n)| ["a", "é", "😀"][w - 1].repeat(n)),
        (120usize..=130).prop_map(|n| "x".repeat(n)),
        Just("x".repeat(513)),
        "[a-z][a-z0-9_]{0,70}",
        "[A-Za-z ./-]{1,10}",
    ]
}

fn arb_push() -> impl Strategy<Value = Push> {
    prop_oneof![
        arb_edge_text().prop_map(Push::Schema),
        arb_edge_text().prop_map(Push::Reason),
        arb_edge_text().prop_map(Push::CurrentThoughtId),
        arb_edge_text().prop_map(Push::LastCallId),
        arb_edge_text().prop_map(Push::ThoughtId),
        arb_edge_text().prop_map(Push::ThoughtKind),
        arb_edge_text().prop_map(Push::ThoughtParent),
        arb_edge_text().prop_map(Push::ThoughtChild),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(-0.0),
            Just(1.0 + f64::EPSILON),
            -2.0..2.0f64
        ]
        .prop_map(Push::Confidence),
        arb_edge_text().prop_map(Push::ToolId),
        arb_edge_text().prop_map(Push::CallId),
        arb_micros().prop_map(Push::Timestamp),
        arb_micros().prop_map(Push::ThoughtCreatedAt),
        arb_micros().prop_map(Push::CallStartedAt),
        arb_micros().prop_map(Push::CallCompletedAt),
        arb_micros().prop_map(Push::StepCompletedAt),
        arb_edge_text().prop_map(Push::Label),
        arb_edge_text().prop_map(Push::Name),
        arb_edge_text().prop_map(Push::AgentId),
        (40usize..130).prop_map(Push::Depth),
        Just(Push::NullResults),
    ]
}

fn nested_array(depth: usize) -> Value {
    (0..depth).fold(Value::Null, |v, _| Value::Array(vec![v]))
}

fn apply(c: &mut Checkpoint, push: &Push) {
    use caf_core::format::{CompletedStep, ToolCall, ToolStatus};
    let b = caf_tests::gen::CheckpointBuilder::new("ckpt_helper")
        .thought("reasoning", "x")
        .tool_call("t", Value::Null, Value::Null)
        .build();
    let thought = || b.snapshot.thought_chain.thoughts[0].clone();
    let call = || -> std::sync::Arc<ToolCall> { b.snapshot.tool_state.calls[0].clone() };
    let snap = &mut c.snapshot;
    if snap.thought_chain.thoughts.is_empty() {
        snap.thought_chain.thoughts.push(thought());
    }
    if snap.tool_state.calls.is_empty() {
        snap.tool_state.calls.push(call());
    }
    if snap.progress.completed_steps.is_empty() {
        snap.progress.completed_steps.push(CompletedStep {
            name: "s".into(),
            result: None,
            duration_ms: None,
            completed_at: Timestamp::from_micros(0),
        });
    }
    let t = std::sync::Arc::make_mut(&mut snap.thought_chain.thoughts[0]);
    let k = std::sync::Arc::make_mut(&mut snap.tool_state.calls[0]);
    match push {
        Push::Schema(s) => c.schema = s.clone(),
        Push::Reason(s) => {
            c.metadata.checkpoint_reason = CheckpointReason::Other(s.clone());
        }
        Push::CurrentThoughtId(s) => snap.thought_chain.current_thought_id = Some(s.clone()),
        Push::LastCallId(s) => snap.tool_state.last_call_id = Some(s.clone()),
        Push::ThoughtId(s) => t.id = s.clone(),
        Push::ThoughtKind(s) => t.kind = s.clone(),
        Push::ThoughtParent(s) => t.parent_id = Some(s.clone()),
        Push::ThoughtChild(s) => t.children.push(s.clone()),
        Push::Confidence(f) => t.confidence = Some(*f),
        Push::ToolId(s) => k.tool_id = s.clone(),
        Push::CallId(s) => k.id = s.clone(),
        Push::Timestamp(m) => c.timestamp = Timestamp::from_micros(*m),
        Push::ThoughtCreatedAt(m) => t.created_at = Timestamp::from_micros(*m),
        Push::CallStartedAt(m) => k.started_at = Some(Timestamp::from_micros(*m)),
        Push::CallCompletedAt(m) => k.completed_at = Some(Timestamp::from_micros(*m)),
        Push::StepCompletedAt(m) => {
            snap.progress.completed_steps[0].completed_at = Timestamp::from_micros(*m);
        }
        Push::Label(s) => c.metadata.labels.push(s.clone()),
        Push::Name(s) => c.metadata.name = Some(s.clone()),
        Push::AgentId(s) => c.agent_id = s.clone(),
        Push::Depth(n) => {
            snap.context
                .variables
                .insert("deep".into(), nested_array(*n));
        }
        Push::NullResults => {
            k.status = ToolStatus::Completed;
            k.result = Some(Value::Null);
            snap.progress.completed_steps[0].result = Some(Value::Null);
        }
    }
}

/// The checkpoint as it reads back: a reason spelled out as `Other("manual")` is `Manual`.
fn normalized(mut c: Checkpoint) -> Checkpoint {
    if let CheckpointReason::Other(s) = &c.metadata.checkpoint_reason {
        if let Ok(r) = s.parse::<CheckpointReason>() {
            c.metadata.checkpoint_reason = r;
        }
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn encode_refuses_or_writes_what_loads_back_equal(
        c in arb_checkpoint(),
        pushes in proptest::collection::vec(arb_push(), 1..3),
    ) {
        let mut c = c;
        for p in &pushes {
            apply(&mut c, p);
        }
        let Ok(bytes) = encode(&c) else {
            // Refusing is fine, except for values the format can hold.
            prop_assert!(
                !pushes.iter().all(|p| matches!(p, Push::NullResults)),
                "encode refused null results: {:?}", encode(&c)
            );
            return Ok(());
        };
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let errors = schema_errors(&doc);
        prop_assert!(errors.is_empty(), "encode wrote a document its schema refuses: {errors:#?}");
        let decoded = decode(&bytes, &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("encode wrote a document decode refuses: {e}")))?;
        prop_assert_eq!(decoded.checkpoint, normalized(c));
    }
}

#[test]
fn the_edges_of_time_round_trip() {
    for micros in [
        0,
        MAX_MICROS,
        -62_167_219_200_000_000, // 0000-01-01T00:00:00Z
        -1,
        1,
    ] {
        let c = caf_tests::gen::CheckpointBuilder::new("ckpt_t")
            .timestamp(Timestamp::from_micros(micros))
            .thought("reasoning", "x")
            .build();
        let bytes = encode(&c).unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(
            schema_errors(&doc).is_empty(),
            "{micros}: {:?}",
            schema_errors(&doc)
        );
        assert_eq!(decode(&bytes, &Limits::default()).unwrap().checkpoint, c);
    }
}
