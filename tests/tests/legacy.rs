//! Golden files, loaded forever.
//!
//! - `tests/fixtures/v0.0.1/*.json` are files of the TypeScript original (both dialects). The
//!   frozen 0.0.1 → 1.0.0 step must produce, as JSON, the committed 1.0.0 file
//!   `tests/fixtures/v1.0.0/from-*.json` (less its checksum); and the whole chain must load it as
//!   the 1.0.0 file loads.
//! - `tests/fixtures/v1.0.0/*.json` are caf's own 1.0.0 files: each keeps loading, migrated in
//!   memory to the current version, and equals its typed value.
//! - `tests/fixtures/v1.1.0/*.json` are files of the current version: each decodes and
//!   re-encodes byte-identically.
//!
//! Comparisons of older versions are on JSON and on loaded values, never on the current
//! encoding, so that they still pass after the next version bump.
//!
//! The golden files are produced by caf itself: `write_golden_files` (ignored) writes those that
//! are missing when run with `CAF_WRITE_GOLDEN=1`:
//!
//! ```text
//! CAF_WRITE_GOLDEN=1 cargo test -p caf-tests --test legacy -- --ignored write_golden_files
//! ```
//!
//! It never overwrites a file: a golden file is a promise to every reader ever written, so changing
//! one is a decision (delete it first), not a side effect. A generated file must be reviewed field
//! by field before it is committed.

#![allow(clippy::unwrap_used)]

use caf_core::format::schema::SCHEMA_URL;
use caf_core::format::{
    decode, encode, Branch, Checkpoint, CheckpointReason, CompletedStep, Context, JsonObject,
    LastError, Limits, Metadata, PlanStep, Progress, Snapshot, StepStatus, Thought, ThoughtChain,
    ToolCall, ToolState, ToolStatus, CURRENT_VERSION,
};
use caf_core::{CheckpointId, ExecutionId, Timestamp};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn read(rel: &str) -> Vec<u8> {
    let path = fixtures().join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_json(rel: &str) -> Value {
    serde_json::from_slice(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Each 0.0.1 fixture and the committed 1.0.0 file its migration must produce.
const MIGRATIONS: &[(&str, &str)] = &[
    ("v0.0.1/seed-example.json", "v1.0.0/from-seed-example.json"),
    ("v0.0.1/ts-caf.json", "v1.0.0/from-ts-caf.json"),
    (
        "v0.0.1/ts-caf-minimal.json",
        "v1.0.0/from-ts-caf-minimal.json",
    ),
];

/// The golden files built from a typed value in this file (of the current version, as they load).
fn built_goldens() -> Vec<(&'static str, Checkpoint)> {
    vec![
        ("v1.0.0/minimal.json", minimal_checkpoint()),
        ("v1.0.0/full.json", full_checkpoint()),
        ("v1.1.0/minimal.json", minimal_checkpoint()),
        ("v1.1.0/full.json", full_checkpoint_1_1_0()),
    ]
}

/// The directory of the golden files of the current version.
fn current_dir() -> String {
    format!("v{CURRENT_VERSION}")
}

fn decode_file(rel: &str) -> caf_core::format::Decoded {
    decode(&read(rel), &Limits::default()).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn migrated(rel: &str) -> Checkpoint {
    decode_file(rel).checkpoint
}

fn migrated_json(rel: &str) -> Value {
    serde_json::from_slice(&encode(&migrated(rel)).unwrap()).unwrap()
}

/// A document without its checksum.
fn without_integrity(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("integrity");
    }
    v
}

/// What the frozen 0.0.1 → 1.0.0 step makes of a 0.0.1 fixture, as JSON.
fn v0_step(rel: &str) -> Value {
    let doc = read_json(rel);
    caf_core::format::migrate::steps(&semver::Version::new(0, 0, 1), "1.0.0", doc).unwrap()
}

/// Panics with the first differing line when `actual` is not `expected`.
fn assert_same_bytes(what: &str, actual: &[u8], expected: &[u8]) {
    if actual == expected {
        return;
    }
    let a = String::from_utf8_lossy(actual);
    let e = String::from_utf8_lossy(expected);
    let (line, (al, el)) = a
        .lines()
        .zip(e.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .unwrap_or((a.lines().count().min(e.lines().count()), ("<end>", "<end>")));
    panic!(
        "{what}: bytes differ ({} vs {} bytes); first difference at line {}:\n  got:      {al}\n  expected: {el}",
        actual.len(),
        expected.len(),
        line + 1
    );
}

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

// ---- the typed goldens ------------------------------------------------------------------------

/// The smallest checkpoint: an empty snapshot, no optional field.
fn minimal_checkpoint() -> Checkpoint {
    Checkpoint::new(
        CheckpointId::new("ckpt_golden_minimal").unwrap(),
        ExecutionId::new("exec_golden_minimal").unwrap(),
        "golden-agent",
        ts("2025-02-05T21:20:00.000000Z"),
        CheckpointReason::Manual,
    )
}

/// A checkpoint with every optional field of format 1.0.0 set (loaded as the current version).
fn full_checkpoint() -> Checkpoint {
    let t = |s: &str| ts(&format!("2025-02-05T21:{s}Z"));
    let thoughts = vec![
        Thought {
            id: "thought_1".into(),
            kind: "planning".into(),
            content: "Plan: search, read, patch, test.".into(),
            confidence: Some(0.92),
            parent_id: None,
            created_at: t("10:00.000001"),
            reasoning: Some("A narrow loop is cheaper than a full test run.".into()),
            alternatives: vec![
                json!({"option": "Run the whole suite first", "reason_rejected": "Slow", "confidence": 0.4}),
                json!({"option": "Ask the user", "reason_rejected": "The README answers it"}),
            ],
            children: vec!["thought_2".into(), "thought_3".into()],
            metadata: obj(json!({"model": "claude-sonnet-4", "prompt_tokens": 1210, "completion_tokens": 164})),
            extensions: obj(json!({"x_origin": "planner-v2"})),
        },
        Thought {
            id: "thought_2".into(),
            kind: "observation".into(),
            content: "parseDate('03/02/2025') returns March 2nd — \"wrong\"\n(expected 3 February) ✓ unicode: naïve 日本 🚀".into(),
            confidence: Some(0.0),
            parent_id: Some("thought_1".into()),
            created_at: t("10:01.500000"),
            reasoning: Some(String::new()),
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: obj(json!({"source_tool_calls": ["call_1", "call_2"]})),
            extensions: JsonObject::new(),
        },
        Thought {
            id: "thought_3".into(),
            kind: "decision".into(),
            content: "Patch the parser.".into(),
            confidence: Some(1.0),
            parent_id: Some("thought_1".into()),
            created_at: t("10:02.999999"),
            reasoning: None,
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: JsonObject::new(),
            extensions: JsonObject::new(),
        },
        Thought {
            id: "thought_4".into(),
            kind: "reflection".into(),
            content: String::new(),
            confidence: None,
            parent_id: None,
            created_at: t("10:03.000000"),
            reasoning: None,
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: JsonObject::new(),
            extensions: JsonObject::new(),
        },
    ];
    let calls = vec![
        ToolCall {
            id: "call_1".into(),
            tool_id: "search".into(),
            args: json!({"query": "parseDate(", "path": "tests", "recursive": true}),
            status: ToolStatus::Completed,
            result: Some(
                json!([{"path": "tests/parser.test.ts", "line_number": 42, "line": "expect(parseDate('03/02/2025'))"}]),
            ),
            success: Some(true),
            error: None,
            started_at: Some(t("10:00.100000")),
            completed_at: Some(t("10:00.284000")),
            duration_ms: Some(184),
            extensions: obj(json!({"duration_ms_exact": 184.37})),
        },
        ToolCall {
            id: "call_2".into(),
            tool_id: "edit_file".into(),
            args: json!({"path": "src/parser.ts", "old_string": "a", "new_string": "b"}),
            status: ToolStatus::Failed,
            result: None,
            success: Some(false),
            error: Some("old_string not found in file".into()),
            started_at: Some(t("10:01.000000")),
            completed_at: Some(t("10:01.005000")),
            duration_ms: Some(5),
            extensions: JsonObject::new(),
        },
        ToolCall {
            id: "call_3".into(),
            tool_id: "bash".into(),
            args: json!({"command": "npm test -- parser", "cwd": "/workspace/app"}),
            status: ToolStatus::Cancelled,
            result: None,
            success: None,
            error: Some("Cancelled by operator".into()),
            started_at: Some(t("10:02.000000")),
            completed_at: Some(t("10:02.500000")),
            duration_ms: Some(500),
            extensions: JsonObject::new(),
        },
        ToolCall {
            id: "call_4".into(),
            tool_id: "edit_file".into(),
            args: json!({"path": "src/parser.ts", "old_string": "m, d", "new_string": "d, m"}),
            status: ToolStatus::Running,
            result: None,
            success: None,
            error: None,
            started_at: Some(t("10:03.000000")),
            completed_at: None,
            duration_ms: None,
            extensions: JsonObject::new(),
        },
        ToolCall::pending(
            "call_5",
            "run_tests",
            json!(["parser", 1, null, false, 2.5]),
        ),
        ToolCall {
            id: "call_6".into(),
            tool_id: "clear_cache".into(),
            args: json!({}),
            status: ToolStatus::Completed,
            result: Some(Value::Null),
            success: Some(true),
            error: None,
            started_at: Some(t("10:03.500000")),
            completed_at: Some(t("10:03.500400")),
            duration_ms: Some(0),
            extensions: JsonObject::new(),
        },
    ];
    Checkpoint {
        schema: SCHEMA_URL.to_string(),
        version: CURRENT_VERSION.into(),
        id: CheckpointId::new("ckpt_golden_full").unwrap(),
        parent_id: Some(CheckpointId::new("ckpt_golden_parent").unwrap()),
        execution_id: ExecutionId::new("exec_golden_full").unwrap(),
        agent_id: "golden-agent".into(),
        timestamp: t("20:00.123456"),
        metadata: Metadata {
            step_number: 3,
            tokens_used: 4821,
            duration_ms: 93017,
            checkpoint_reason: CheckpointReason::Branch,
            name: Some("before-parser-patch".into()),
            description: Some("Branch point after the failed edit; the retry is running.".into()),
            labels: vec!["golden".into(), "parser".into(), "needs-review".into()],
            agent_name: Some("Golden Agent".into()),
            branch: Some(Branch {
                reason: Some("Low confidence after a failed edit".into()),
            }),
            extensions: obj(json!({"team": {"name": "infra", "oncall": ["ana", "bo"]}})),
        },
        snapshot: Snapshot {
            thought_chain: ThoughtChain {
                current_thought_id: Some("thought_3".into()),
                thoughts: thoughts.into_iter().map(Arc::new).collect(),
            },
            context: Context {
                variables: obj(json!({
                    "task": "fix tests/parser.test.ts",
                    "attempt": 2,
                    "score": 0.85,
                    "big": u64::MAX,
                    "negative": -42,
                    "tiny": 1e-7,
                    "huge": 1.5e300,
                    "nothing": null,
                    "flags": {"dry_run": false, "allow_shell": true},
                    "list": [1, "two", true, null, {"three": 3}],
                    "escapes": "tab\there, quote\" backslash\\ control\u{1}",
                })),
                state: obj(json!({"phase": "patching", "retries": {"edit_file": 1}})),
                history: vec![
                    json!({"event": "started", "step": 0}),
                    json!("free-form note"),
                    json!(42),
                ],
                messages: vec![
                    json!({"role": "system", "content": "You are Golden Agent."}),
                    json!({"role": "user", "content": "tests/parser.test.ts fails. Fix it."}),
                    json!({"role": "assistant", "content": "Searching first.", "tool_calls": [{"id": "call_1", "name": "search"}]}),
                    json!({"role": "tool", "content": "1 match", "tool_call_id": "call_1"}),
                ],
                memory: vec![
                    json!({"key": "parser.date_format", "value": {"documented": "DD/MM/YYYY"}, "importance": 0.8}),
                    json!({"key": "user.preference", "value": "minimal diffs", "importance": 0.35}),
                ],
            },
            tool_state: ToolState {
                calls: calls.into_iter().map(Arc::new).collect(),
                results: obj(json!({
                    "search": [{"path": "tests/parser.test.ts", "line_number": 42, "line": "expect(parseDate('03/02/2025'))"}],
                    "clear_cache": null,
                })),
                last_call_id: Some("call_6".into()),
            },
            progress: Progress {
                step_number: 3,
                total_steps: Some(6),
                iterations_completed: 2,
                completed_steps: vec![
                    CompletedStep {
                        name: "search".into(),
                        result: Some(json!({"matches": 1})),
                        duration_ms: Some(184),
                        completed_at: t("10:00.284000"),
                    },
                    CompletedStep {
                        name: "read".into(),
                        result: Some(json!("export function parseDate(input: string): Date {…}")),
                        duration_ms: Some(3),
                        completed_at: t("10:00.900000"),
                    },
                    CompletedStep {
                        name: "diagnose".into(),
                        result: None,
                        duration_ms: None,
                        completed_at: t("10:01.600000"),
                    },
                    CompletedStep {
                        name: "clear-cache".into(),
                        result: Some(Value::Null),
                        duration_ms: Some(0),
                        completed_at: t("10:03.500400"),
                    },
                ],
                pending_steps: vec!["patch".into(), "test".into(), "report".into()],
                ..Progress::default()
            },
        },
        extensions: obj(json!({"x_vendor": {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}})),
    }
}

/// The full checkpoint with every member 1.1.0 adds: a plan in every status, the task, the last
/// error.
fn full_checkpoint_1_1_0() -> Checkpoint {
    let t = |s: &str| ts(&format!("2025-02-05T21:{s}Z"));
    let mut c = full_checkpoint();
    let p = &mut c.snapshot.progress;
    p.task = Some("Fix parseDate for day-first dates; keep the tests green".into());
    p.plan = vec![
        PlanStep {
            action: Some("search".into()),
            attempts: 1,
            completed_at: Some(t("10:00.284000")),
            description: Some("Find the failing test".into()),
            parameters: obj(json!({"pattern": "parseDate", "path": "tests/"})),
            result: Some(json!({"matches": 1})),
            started_at: Some(t("10:00.100000")),
            status: StepStatus::Completed,
            ..PlanStep::new("search")
        },
        PlanStep {
            action: Some("read_file".into()),
            dependencies: vec!["search".into()],
            description: Some("Read the parser (already in context)".into()),
            status: StepStatus::Skipped,
            ..PlanStep::new("read")
        },
        PlanStep {
            action: Some("apply_patch".into()),
            attempts: 2,
            dependencies: vec!["search".into(), "read".into()],
            description: Some("Patch the parser".into()),
            error: Some("patch did not apply: context mismatch".into()),
            started_at: Some(t("10:03.000000")),
            completed_at: Some(t("10:03.400000")),
            status: StepStatus::Failed,
            ..PlanStep::new("patch")
        },
        PlanStep {
            action: Some("run_tests".into()),
            dependencies: vec!["patch".into()],
            started_at: Some(t("10:03.450000")),
            status: StepStatus::Running,
            ..PlanStep::new("test")
        },
        PlanStep {
            description: Some("Report to the user".into()),
            dependencies: vec!["test".into()],
            ..PlanStep::new("report")
        },
    ];
    p.last_error = Some(LastError {
        at: t("10:03.400000"),
        message: "patch did not apply: context mismatch".into(),
        step: Some("patch".into()),
    });
    c
}

// ---- the generator ----------------------------------------------------------------------------

/// Writes the golden files of the current version that are missing (never overwrites one).
#[test]
#[ignore = "writes golden files: CAF_WRITE_GOLDEN=1 cargo test -p caf-tests --test legacy -- --ignored"]
fn write_golden_files() {
    if std::env::var_os("CAF_WRITE_GOLDEN").is_none() {
        eprintln!("set CAF_WRITE_GOLDEN=1 to write the missing golden files");
        return;
    }
    let dir = current_dir();
    std::fs::create_dir_all(fixtures().join(&dir)).unwrap();
    for (rel, c) in built_goldens() {
        if !rel.starts_with(&format!("{dir}/")) {
            continue;
        }
        let path = fixtures().join(rel);
        if path.exists() {
            eprintln!("kept    {rel} (exists; delete it to regenerate)");
        } else {
            std::fs::write(&path, encode(&c).unwrap()).unwrap();
            eprintln!("wrote   {rel} (review it field by field before committing)");
        }
    }
}

// ---- golden tests -----------------------------------------------------------------------------

#[test]
fn every_v0_fixture_migrates_to_its_committed_1_0_0_file() {
    let dir = fixtures().join("v0.0.1");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| format!("v0.0.1/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".json"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = MIGRATIONS.iter().map(|(s, _)| s.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "every 0.0.1 fixture needs an expected 1.0.0 file"
    );

    for (src, expected) in MIGRATIONS {
        // The frozen step alone produces the committed 1.0.0 document.
        assert_eq!(
            v0_step(src),
            without_integrity(read_json(expected)),
            "{src}: the 0.0.1 -> 1.0.0 step"
        );
        // Through every step, it loads as the 1.0.0 file does.
        let decoded = decode_file(src);
        assert_eq!(decoded.source_version, "0.0.1", "{src}");
        assert!(decoded.was_migrated(), "{src}");
        let again = decode_file(expected);
        assert_eq!(again.source_version, "1.0.0");
        assert_eq!(again.checkpoint, decoded.checkpoint, "{expected}");
        assert_eq!(decoded.checkpoint.version, CURRENT_VERSION);
    }
}

/// The golden files of one version directory, by name.
fn golden_names(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_v1_0_0_file_keeps_loading() {
    let names = golden_names("v1.0.0");
    for required in [
        "minimal.json",
        "full.json",
        "from-seed-example.json",
        "from-ts-caf.json",
        "from-ts-caf-minimal.json",
    ] {
        assert!(names.iter().any(|n| n == required), "missing {required}");
    }
    for name in names {
        let rel = format!("v1.0.0/{name}");
        let decoded = decode_file(&rel);
        assert_eq!(decoded.source_version, "1.0.0", "{rel}");
        assert_eq!(decoded.checkpoint.version, CURRENT_VERSION, "{rel}");
        // Nothing but the version and `$schema` changes on the way to the current version.
        let mut loaded = serde_json::to_value(&decoded.checkpoint).unwrap();
        let mut file = without_integrity(read_json(&rel));
        for v in [&mut loaded, &mut file] {
            let m = v.as_object_mut().unwrap();
            m.remove("version");
            m.remove("$schema");
        }
        assert_eq!(loaded, file, "{rel}");
    }
}

#[test]
fn every_file_of_the_current_version_reencodes_byte_identically() {
    let dir = current_dir();
    let names = golden_names(&dir);
    for required in ["minimal.json", "full.json"] {
        assert!(
            names.iter().any(|n| n == required),
            "{dir}: missing {required}"
        );
    }
    for name in names {
        let rel = format!("{dir}/{name}");
        let bytes = read(&rel);
        assert!(bytes.ends_with(b"}\n"), "{rel}: one trailing newline");
        assert!(!bytes.contains(&b'\r'), "{rel}: LF line endings");
        let decoded = decode_file(&rel);
        assert_eq!(decoded.source_version, CURRENT_VERSION, "{rel}");
        assert!(!decoded.was_migrated(), "{rel}");
        assert_same_bytes(&rel, &encode(&decoded.checkpoint).unwrap(), &bytes);
    }
}

#[test]
fn built_goldens_match_their_typed_values() {
    for (rel, value) in built_goldens() {
        assert_eq!(decode_file(rel).checkpoint, value, "{rel}");
        if rel.starts_with(&format!("{}/", current_dir())) {
            assert_same_bytes(rel, &encode(&value).unwrap(), &read(rel));
        }
    }
}

/// Every key reachable in `v`, as JSON Pointers with array indexes replaced by `*`.
fn key_paths(v: &Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.insert(p.clone());
                // Free-form values (the agent's own data) are not part of the format's shape.
                if !matches!(
                    k.as_str(),
                    "extensions" | "variables" | "state" | "metadata" | "args" | "result"
                ) || p == "/metadata"
                {
                    key_paths(x, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{at}/*"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn full_golden_sets_every_optional_field() {
    let doc = read_json("v1.0.0/full.json");
    let mut paths = std::collections::BTreeSet::new();
    key_paths(&doc, "", &mut paths);
    for p in [
        "/$schema",
        "/extensions",
        "/integrity",
        "/parent_id",
        "/metadata/name",
        "/metadata/description",
        "/metadata/labels",
        "/metadata/agent_name",
        "/metadata/branch",
        "/metadata/branch/reason",
        "/metadata/extensions",
        "/snapshot/thought_chain/current_thought_id",
        "/snapshot/thought_chain/thoughts/*/confidence",
        "/snapshot/thought_chain/thoughts/*/parent_id",
        "/snapshot/thought_chain/thoughts/*/reasoning",
        "/snapshot/thought_chain/thoughts/*/alternatives",
        "/snapshot/thought_chain/thoughts/*/children",
        "/snapshot/thought_chain/thoughts/*/metadata",
        "/snapshot/thought_chain/thoughts/*/extensions",
        "/snapshot/context/messages",
        "/snapshot/context/memory",
        "/snapshot/tool_state/last_call_id",
        "/snapshot/tool_state/calls/*/result",
        "/snapshot/tool_state/calls/*/success",
        "/snapshot/tool_state/calls/*/error",
        "/snapshot/tool_state/calls/*/started_at",
        "/snapshot/tool_state/calls/*/completed_at",
        "/snapshot/tool_state/calls/*/duration_ms",
        "/snapshot/tool_state/calls/*/extensions",
        "/snapshot/progress/total_steps",
        "/snapshot/progress/iterations_completed",
        "/snapshot/progress/completed_steps/*/result",
        "/snapshot/progress/completed_steps/*/duration_ms",
    ] {
        assert!(paths.contains(p), "full.json lacks {p}");
    }
    // Every schema property of 1.0.0 appears (the schema and the golden stay in step).
    let schema: Value =
        serde_json::from_str(caf_core::format::versions::find("1.0.0").unwrap().schema).unwrap();
    every_schema_property_appears(&schema, &paths, "v1.0.0/full.json");
    tool_statuses_and_steps_are_all_there(&doc);
}

/// Every property of every object of `schema` appears in `paths`.
fn every_schema_property_appears(
    schema: &Value,
    paths: &std::collections::BTreeSet<String>,
    what: &str,
) {
    let defs = &schema["$defs"];
    for (def, at) in [
        ("metadata", "/metadata"),
        ("thought_chain", "/snapshot/thought_chain"),
        ("thought", "/snapshot/thought_chain/thoughts/*"),
        ("context", "/snapshot/context"),
        ("tool_state", "/snapshot/tool_state"),
        ("tool_call", "/snapshot/tool_state/calls/*"),
        ("progress", "/snapshot/progress"),
    ]
    .into_iter()
    .chain(
        defs.get("plan_step")
            .map(|_| ("plan_step", "/snapshot/progress/plan/*")),
    )
    .chain(
        defs.get("last_error")
            .map(|_| ("last_error", "/snapshot/progress/last_error")),
    ) {
        for key in defs[def]["properties"].as_object().unwrap().keys() {
            assert!(
                paths.contains(&format!("{at}/{key}")),
                "{what} lacks {at}/{key}"
            );
        }
    }
    for key in schema["properties"].as_object().unwrap().keys() {
        assert!(paths.contains(&format!("/{key}")), "{what} lacks /{key}");
    }
}

fn tool_statuses_and_steps_are_all_there(doc: &Value) {
    let statuses: std::collections::BTreeSet<&str> = doc["snapshot"]["tool_state"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["cancelled", "completed", "failed", "pending", "running"].into()
    );
    assert!(!doc["snapshot"]["progress"]["completed_steps"]
        .as_array()
        .unwrap()
        .is_empty());
    assert!(!doc["snapshot"]["progress"]["pending_steps"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn full_golden_of_1_1_0_sets_every_member_it_adds() {
    let doc = read_json("v1.1.0/full.json");
    let mut paths = std::collections::BTreeSet::new();
    key_paths(&doc, "", &mut paths);
    let schema: Value =
        serde_json::from_str(caf_core::format::versions::find("1.1.0").unwrap().schema).unwrap();
    every_schema_property_appears(&schema, &paths, "v1.1.0/full.json");
    tool_statuses_and_steps_are_all_there(&doc);
    let statuses: std::collections::BTreeSet<&str> = doc["snapshot"]["progress"]["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["completed", "failed", "pending", "running", "skipped"].into()
    );
}

#[test]
fn minimal_golden_has_an_empty_snapshot() {
    let doc = read_json("v1.0.0/minimal.json");
    assert_eq!(
        doc["snapshot"],
        json!({
            "thought_chain": {"thoughts": []},
            "context": {"variables": {}, "state": {}, "history": []},
            "tool_state": {"calls": [], "results": {}},
            "progress": {"step_number": 0, "iterations_completed": 0, "completed_steps": [], "pending_steps": []},
        })
    );
    assert_eq!(doc["parent_id"], Value::Null);
    assert!(doc.get("extensions").is_none());
}

// ---- what the migration does ------------------------------------------------------------------

#[test]
fn ts_parent_becomes_parent_id_and_branch() {
    let src = read_json("v0.0.1/ts-caf.json");
    let c = migrated("v0.0.1/ts-caf.json");
    assert_eq!(
        c.parent_id.as_ref().map(|p| p.as_str()),
        src["parent"]["checkpoint_id"].as_str()
    );
    assert_eq!(
        c.metadata.branch,
        Some(Branch {
            reason: src["parent"]["branch_reason"].as_str().map(String::from)
        })
    );
    assert_eq!(c.metadata.checkpoint_reason, CheckpointReason::Branch);
    // No parent: no lineage, no branch.
    for rel in ["v0.0.1/ts-caf-minimal.json", "v0.0.1/seed-example.json"] {
        let c = migrated(rel);
        assert_eq!(c.parent_id, None, "{rel}");
        assert_eq!(c.metadata.branch, None, "{rel}");
    }
}

#[test]
fn ts_parent_that_is_not_a_branch_keeps_its_reason_in_extensions() {
    let mut doc = read_json("v0.0.1/ts-caf-minimal.json");
    doc["parent"] =
        json!({"checkpoint_id": "ckpt_prev", "is_branch": false, "branch_reason": "why not"});
    let c = caf_core::format::decode_value(doc).unwrap().checkpoint;
    assert_eq!(c.parent_id.unwrap().as_str(), "ckpt_prev");
    assert_eq!(c.metadata.branch, None);
    assert_eq!(c.extensions["/parent/branch_reason"], json!("why not"));
    assert_eq!(c.extensions["/parent/is_branch"], json!(false));
}

fn with_reason(rel: &str, reason: &str) -> Checkpoint {
    let mut doc = read_json(rel);
    doc["metadata"]["checkpoint_reason"] = json!(reason);
    caf_core::format::decode_value(doc)
        .unwrap_or_else(|e| panic!("{reason}: {e}"))
        .checkpoint
}

#[test]
fn reasons_are_mapped_and_renamed_ones_keep_their_legacy_name() {
    // (0.0.1 reason, 1.0.0 reason, kept as legacy_reason)
    let table = [
        ("step_complete", CheckpointReason::StepCompleted, true),
        ("tool_error", CheckpointReason::Error, true),
        ("auto", CheckpointReason::Periodic, true),
        ("manual", CheckpointReason::Manual, false),
        ("low_confidence", CheckpointReason::LowConfidence, false),
        ("decision", CheckpointReason::Decision, false),
        ("branch", CheckpointReason::Branch, false),
    ];
    for (old, new, legacy) in table {
        let c = with_reason("v0.0.1/ts-caf-minimal.json", old);
        assert_eq!(c.metadata.checkpoint_reason, new, "{old}");
        assert_eq!(
            c.metadata.extensions.get("legacy_reason"),
            legacy.then(|| json!(old)).as_ref(),
            "{old}"
        );
    }
    // The seed dialect's reason is free text: snake_case words are kept, the rest become
    // `legacy` with the original kept.
    let c = with_reason("v0.0.1/seed-example.json", "thought_completed");
    assert_eq!(
        c.metadata.checkpoint_reason,
        CheckpointReason::ThoughtCompleted
    );
    assert!(c.metadata.extensions.is_empty());
    let c = with_reason("v0.0.1/seed-example.json", "custom_reason");
    assert_eq!(
        c.metadata.checkpoint_reason,
        CheckpointReason::Other("custom_reason".into())
    );
    let c = with_reason("v0.0.1/seed-example.json", "Because I said so!");
    assert_eq!(
        c.metadata.checkpoint_reason,
        CheckpointReason::Other("legacy".into())
    );
    assert_eq!(
        c.metadata.extensions["legacy_reason"],
        json!("Because I said so!")
    );
}

#[test]
fn unknown_fields_end_in_extensions() {
    let c = migrated("v0.0.1/ts-caf.json");
    assert_eq!(c.extensions["x_custom"], json!({"note": "kept"}));
    let src = read_json("v0.0.1/ts-caf.json");
    assert_eq!(
        c.extensions["diff"], src["diff"],
        "the diff is kept verbatim"
    );

    // Unknown fields at every level of both dialects.
    let mut seed = read_json("v0.0.1/seed-example.json");
    seed["x_top"] = json!(1);
    seed["snapshot"]["x_snap"] = json!(2);
    seed["snapshot"]["context"]["x_ctx"] = json!(3);
    seed["snapshot"]["tool_state"]["x_tools"] = json!(4);
    seed["snapshot"]["progress"]["x_prog"] = json!(5);
    seed["snapshot"]["thought_chain"][0]["x_thought"] = json!(6);
    seed["metadata"]["x_meta"] = json!(7);
    let c = caf_core::format::decode_value(seed).unwrap().checkpoint;
    assert_eq!(c.extensions["x_top"], json!(1));
    assert_eq!(c.extensions["/snapshot/x_snap"], json!(2));
    assert_eq!(c.extensions["/snapshot/context/x_ctx"], json!(3));
    assert_eq!(c.extensions["/snapshot/tool_state/x_tools"], json!(4));
    assert_eq!(c.extensions["/snapshot/progress/x_prog"], json!(5));
    assert_eq!(
        c.snapshot.thought_chain.thoughts[0].extensions["x_thought"],
        json!(6)
    );
    assert_eq!(c.metadata.extensions["x_meta"], json!(7));

    let mut ts = read_json("v0.0.1/ts-caf.json");
    ts["snapshot"]["thought_chain"]["x_chain"] = json!(8);
    ts["snapshot"]["thought_chain"]["steps"][0]["x_step"] = json!(9);
    ts["snapshot"]["tool_state"]["completed"][0]["x_call"] = json!(10);
    ts["parent"]["x_parent"] = json!(11);
    let c = caf_core::format::decode_value(ts).unwrap().checkpoint;
    assert_eq!(c.extensions["/snapshot/thought_chain/x_chain"], json!(8));
    assert_eq!(
        c.snapshot.thought_chain.thoughts[0].extensions["x_step"],
        json!(9)
    );
    let call = c
        .snapshot
        .tool_state
        .calls
        .iter()
        .find(|x| x.id == "call_01")
        .unwrap();
    assert_eq!(call.extensions["x_call"], json!(10));
    assert_eq!(c.extensions["/parent/x_parent"], json!(11));
}

fn is_rfc3339_micros_utc(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    b.len() == 27
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'.'
        && digits(20..26)
        && b[26] == b'Z'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

/// Every value under a timestamp-like key (outside free-form data), with its pointer.
fn timestamps(v: &Value, at: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                if matches!(
                    k.as_str(),
                    "timestamp" | "created_at" | "started_at" | "completed_at"
                ) {
                    out.push((p.clone(), x.clone()));
                }
                let free_form = matches!(
                    k.as_str(),
                    "extensions"
                        | "variables"
                        | "state"
                        | "args"
                        | "result"
                        | "messages"
                        | "memory"
                        | "history"
                        | "alternatives"
                ) || (k == "metadata" && at.contains("thoughts"));
                if !free_form {
                    timestamps(x, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                timestamps(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn migrated_timestamps_are_rfc3339() {
    for (src, _) in MIGRATIONS {
        let doc = migrated_json(src);
        let mut found = Vec::new();
        timestamps(&doc, "", &mut found);
        assert!(!found.is_empty(), "{src}");
        for (p, v) in found {
            let s = v
                .as_str()
                .unwrap_or_else(|| panic!("{src} {p}: {v} is not a string"));
            assert!(is_rfc3339_micros_utc(s), "{src} {p}: {s}");
        }
    }
    let c = migrated("v0.0.1/seed-example.json");
    assert_eq!(c.timestamp.to_string(), "2025-02-05T21:20:00.000000Z"); // 1738790400000
    assert_eq!(
        c.snapshot.thought_chain.thoughts[0].created_at.to_string(),
        "2025-02-05T21:18:20.000000Z" // 1738790300000
    );
    let c = migrated("v0.0.1/ts-caf.json");
    let t = &c.snapshot.thought_chain.thoughts;
    assert_eq!(t[0].created_at.as_millis(), 1738790359870);
    assert_eq!(t[0].created_at.to_string(), "2025-02-05T21:19:19.870000Z");
}

fn call<'a>(c: &'a Checkpoint, id: &str) -> &'a ToolCall {
    c.snapshot
        .tool_state
        .calls
        .iter()
        .find(|x| x.id == id)
        .unwrap_or_else(|| panic!("no call {id}"))
}

#[test]
fn ts_tool_calls_keep_every_status_and_exact_durations() {
    let src = read_json("v0.0.1/ts-caf.json");
    let c = migrated("v0.0.1/ts-caf.json");
    let calls = &c.snapshot.tool_state.calls;
    assert_eq!(calls.len(), 6);
    let status = |id: &str| call(&c, id).status;
    assert_eq!(status("call_01"), ToolStatus::Completed);
    assert_eq!(status("call_02"), ToolStatus::Completed);
    assert_eq!(status("call_03"), ToolStatus::Failed);
    assert_eq!(status("call_04"), ToolStatus::Cancelled);
    assert_eq!(status("call_05"), ToolStatus::Running);
    assert_eq!(status("call_06"), ToolStatus::Pending);
    // Calls known only by id are marked as such.
    for id in ["call_05", "call_06"] {
        assert_eq!(call(&c, id).extensions["id_only"], json!(true));
        assert_eq!(call(&c, id).started_at, None);
    }
    assert_eq!(
        c.snapshot.tool_state.last_call_id.as_deref(),
        Some("call_06")
    );

    // 184.37 ms: rounded in duration_ms, exact in extensions; completed_at follows from it.
    let c1 = call(&c, "call_01");
    assert_eq!(c1.duration_ms, Some(184));
    assert_eq!(c1.extensions["duration_ms_exact"], json!(184.37));
    assert_eq!(c1.started_at.unwrap().as_millis(), 1738790361410);
    assert_eq!(c1.completed_at.unwrap().as_millis(), 1738790361410 + 184);
    assert_eq!(c1.success, Some(true));
    assert_eq!(
        c1.result.as_ref(),
        Some(&src["snapshot"]["tool_state"]["completed"][0]["result"])
    );
    assert_eq!(
        c1.args,
        src["snapshot"]["tool_state"]["completed"][0]["arguments"]
    );
    // A whole duration has no exact copy.
    assert!(call(&c, "call_02").extensions.is_empty());
    let c3 = call(&c, "call_03");
    assert_eq!(c3.success, Some(false));
    assert_eq!(c3.error.as_deref(), Some("old_string not found in file"));
    let c4 = call(&c, "call_04");
    assert_eq!(c4.success, None);
    assert_eq!(c4.duration_ms, None);
    assert!(c4
        .error
        .as_deref()
        .unwrap()
        .starts_with("Cancelled by operator"));
    // results: the latest result of each completed tool.
    assert_eq!(
        c.snapshot.tool_state.results["read_file"],
        src["snapshot"]["tool_state"]["completed"][1]["result"]
    );

    // Checkpoint-level fractional durations are kept exactly too.
    let mut doc = read_json("v0.0.1/ts-caf-minimal.json");
    doc["metadata"]["duration_ms"] = json!(1234.5);
    let c = caf_core::format::decode_value(doc).unwrap().checkpoint;
    assert_eq!(c.metadata.duration_ms, 1235);
    assert_eq!(c.metadata.extensions["duration_ms_exact"], json!(1234.5));
}

#[test]
fn ts_thoughts_messages_and_memory_are_kept_verbatim() {
    let src = read_json("v0.0.1/ts-caf.json");
    let c = migrated("v0.0.1/ts-caf.json");
    let steps = src["snapshot"]["thought_chain"]["steps"]
        .as_array()
        .unwrap();
    let thoughts = &c.snapshot.thought_chain.thoughts;
    assert_eq!(thoughts.len(), steps.len());
    for (t, s) in thoughts.iter().zip(steps) {
        assert_eq!(json!(t.id), s["id"]);
        assert_eq!(json!(t.kind), s["type"]);
        assert_eq!(json!(t.content), s["content"]);
        assert_eq!(json!(t.reasoning), s["reasoning"]);
        assert_eq!(json!(t.confidence), s["confidence"]);
        assert_eq!(json!(t.parent_id), s["parent_id"]);
        assert_eq!(json!(t.children), s["children"]);
        assert_eq!(Value::Array(t.alternatives.clone()), s["alternatives"]);
        assert_eq!(Value::Object(t.metadata.clone()), s["metadata"]);
        assert_eq!(json!(t.created_at.as_millis()), s["timestamp"]);
        assert!(t.extensions.is_empty());
    }
    assert_eq!(
        json!(c.snapshot.thought_chain.current_thought_id),
        src["snapshot"]["thought_chain"]["current_step_id"]
    );
    let ctx = &c.snapshot.context;
    assert_eq!(
        Value::Array(ctx.messages.clone()),
        src["snapshot"]["context"]["messages"]
    );
    assert_eq!(
        Value::Array(ctx.memory.clone()),
        src["snapshot"]["context"]["memory"]
    );
    assert_eq!(
        Value::Object(ctx.variables.clone()),
        src["snapshot"]["context"]["variables"]
    );

    let md = &c.metadata;
    assert_eq!(md.name.as_deref(), src["name"].as_str());
    assert_eq!(md.description.as_deref(), src["description"].as_str());
    assert_eq!(md.agent_name.as_deref(), Some("Repo Auditor"));
    assert_eq!(md.step_number, 7);
    assert_eq!(md.tokens_used, 5234);
    assert_eq!(md.duration_ms, 41902);
    let p = &c.snapshot.progress;
    assert_eq!(
        (p.step_number, p.total_steps, p.iterations_completed),
        (7, Some(12), 2)
    );
    // progress.duration_ms (39877) differs from metadata's (41902): kept.
    assert_eq!(c.extensions["/snapshot/progress/duration_ms"], json!(39877));
}

#[test]
fn seed_example_is_carried_over() {
    let c = migrated("v0.0.1/seed-example.json");
    assert_eq!(c.id.as_str(), "ckpt_abc123");
    assert_eq!(c.execution_id.as_str(), "exec_xyz");
    assert_eq!(c.agent_id, "my-agent");
    let t = &c.snapshot.thought_chain.thoughts[0];
    assert_eq!(
        (t.id.as_str(), t.kind.as_str(), t.confidence),
        ("thought_001", "reasoning", Some(0.85))
    );
    assert_eq!(t.content, "I need to analyze the codebase structure");
    assert_eq!(c.snapshot.context.variables["task"], json!("code analysis"));
    assert_eq!(c.snapshot.progress.step_number, 1);
    assert_eq!(
        (
            c.metadata.step_number,
            c.metadata.tokens_used,
            c.metadata.duration_ms
        ),
        (1, 250, 1200)
    );
    // The counters agree with the content, so nothing needed keeping.
    assert!(c.extensions.is_empty());
    assert!(c.metadata.extensions.is_empty());
}

#[test]
fn seed_tool_calls_get_a_status() {
    let mut doc = read_json("v0.0.1/seed-example.json");
    doc["snapshot"]["tool_state"]["calls"] = json!([
        {"id": "c1", "tool_id": "search", "args": {"q": 1}, "result": [1], "success": true, "started_at": 1738790300000_u64, "completed_at": 1738790300250_u64},
        {"id": "c2", "tool_id": "search", "success": false, "error": "boom", "started_at": 1738790300000_u64, "completed_at": 1738790300001_u64},
        {"id": "c3", "tool_id": "search", "started_at": 1738790300000_u64},
        {"id": "c4", "tool_id": "search", "started_at": 1738790300000_u64, "completed_at": 1738790300002_u64},
    ]);
    doc["snapshot"]["progress"]["total_tool_calls"] = json!(4);
    let c = caf_core::format::decode_value(doc).unwrap().checkpoint;
    let s: Vec<ToolStatus> = c
        .snapshot
        .tool_state
        .calls
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(
        s,
        [
            ToolStatus::Completed,
            ToolStatus::Failed,
            ToolStatus::Running,
            ToolStatus::Completed
        ]
    );
    assert_eq!(c.snapshot.tool_state.calls[0].duration_ms, Some(250));
    assert_eq!(c.snapshot.tool_state.calls[2].args, json!({}));
    // The counters match the content: not kept.
    assert!(c.extensions.is_empty());
}

#[test]
fn a_null_result_survives_a_round_trip() {
    let mut c = minimal_checkpoint();
    c.snapshot.tool_state.calls.push(Arc::new(ToolCall {
        id: "call_null".into(),
        tool_id: "noop".into(),
        args: json!({}),
        status: ToolStatus::Completed,
        result: Some(Value::Null),
        success: Some(true),
        error: None,
        started_at: None,
        completed_at: None,
        duration_ms: None,
        extensions: JsonObject::new(),
    }));
    c.snapshot.progress.completed_steps.push(CompletedStep {
        name: "nothing".into(),
        result: Some(Value::Null),
        duration_ms: None,
        completed_at: c.timestamp,
    });
    let bytes = encode(&c).unwrap();
    let back = decode(&bytes, &Limits::default()).unwrap().checkpoint;
    assert_eq!(back, c, "a result of null is not an absent result");
    assert_same_bytes("null result", &encode(&back).unwrap(), &bytes);
}

// ---- duplicate ids ----------------------------------------------------------------------------

/// `doc` with a fresh checksum (a 1.0.0 file whose content was edited on purpose).
fn resealed(mut doc: Value) -> Vec<u8> {
    let m = doc.as_object_mut().unwrap();
    m.remove("integrity");
    let integrity = caf_core::format::integrity_of(&doc);
    doc["integrity"] = integrity.into();
    serde_json::to_vec_pretty(&doc).unwrap()
}

/// The pointer and message of a refusal.
fn refusal(bytes: &[u8]) -> (String, String) {
    match decode(bytes, &Limits::default()) {
        Err(caf_core::LoadError::Invalid { pointer, message }) => (pointer, message),
        other => panic!("expected an invalid document, got {other:?}"),
    }
}

#[test]
fn duplicate_thought_or_tool_call_ids_are_refused_with_the_pointer_of_the_second() {
    let mut doc = read_json("v1.0.0/full.json");
    doc["snapshot"]["thought_chain"]["thoughts"][2]["id"] = "thought_1".into();
    let (pointer, message) = refusal(&resealed(doc));
    assert_eq!(pointer, "/snapshot/thought_chain/thoughts/2/id");
    assert!(
        message.contains("duplicate thought id \"thought_1\""),
        "{message}"
    );

    let mut doc = read_json("v1.0.0/full.json");
    doc["snapshot"]["tool_state"]["calls"][5]["id"] = "call_4".into();
    let (pointer, message) = refusal(&resealed(doc));
    assert_eq!(pointer, "/snapshot/tool_state/calls/5/id");
    assert!(message.contains("duplicate tool call id"), "{message}");

    // Encoding refuses them too: caf never writes what it would refuse to read.
    let mut c = full_checkpoint_1_1_0();
    let first = c.snapshot.thought_chain.thoughts[0].id.clone();
    Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[1]).id = first;
    assert!(encode(&c).is_err());
}

#[test]
fn duplicate_ids_in_a_0_0_1_file_are_refused_when_migrating() {
    let mut doc = read_json("v0.0.1/seed-example.json");
    let thought = doc["snapshot"]["thought_chain"][0].clone();
    doc["snapshot"]["thought_chain"]
        .as_array_mut()
        .unwrap()
        .push(thought);
    let (pointer, message) = refusal(&serde_json::to_vec(&doc).unwrap());
    assert_eq!(pointer, "/snapshot/thought_chain/thoughts/1/id");
    assert!(message.contains("duplicate thought id"), "{message}");
}

#[test]
fn plan_steps_need_unique_ids_and_known_dependencies() {
    let mut c = full_checkpoint_1_1_0();
    c.snapshot.progress.plan[4].id = "search".into();
    let err = encode(&c).unwrap_err().to_string();
    assert!(err.contains("/snapshot/progress/plan/4/id"), "{err}");
    let mut c = full_checkpoint_1_1_0();
    c.snapshot.progress.plan[1].dependencies = vec!["nowhere".into()];
    let err = encode(&c).unwrap_err().to_string();
    assert!(
        err.contains("/snapshot/progress/plan/1/dependencies/0"),
        "{err}"
    );
}
