//! The JSON Schemas in `schemas/` against fixture documents.
//!
//! Every file in `tests/fixtures/schema/valid/` must pass, and every file in
//! `tests/fixtures/schema/invalid/` must fail, the schema of its `version`
//! (`schemas/checkpoint-{version}.schema.json`, draft 2020-12, formats validated), checked with the
//! `jsonschema` crate directly, not through caf. An invalid file must fail for the reason it is
//! named after: the table below gives the JSON Pointer each one must be reported at.
//!
//! The fixtures are built from the golden files by the recipes below; `write_schema_fixtures`
//! (ignored) writes the missing ones when run with `CAF_WRITE_FIXTURES=1`, and a test checks that
//! the committed files are what the recipes make. 1.0.0 documents whose only fault is a wrong
//! checksum are valid as far as the schema goes: they belong to `tests/fixtures/hostile/`.

#![allow(clippy::unwrap_used)]

use caf_core::format::{decode, integrity_of, Limits, LoadError};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn fixtures() -> PathBuf {
    root().join("fixtures")
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The validator for `version`, compiled from the schema file on disk.
fn validator(version: &str) -> jsonschema::Validator {
    let path = root()
        .join("..")
        .join("schemas")
        .join(format!("checkpoint-{version}.schema.json"));
    let schema = read_json(&path);
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every error of `doc` against the schema of its version, as (instance pointer, message).
fn errors(doc: &Value) -> Vec<(String, String)> {
    let version = doc["version"]
        .as_str()
        .expect("a schema fixture names its version");
    let v = validator(version);
    v.iter_errors(doc)
        .map(|e| (e.instance_path().to_string(), e.to_string()))
        .collect()
}

// ---- recipes ----------------------------------------------------------------------------------

type Mutation = fn(&mut Value);

/// A valid fixture: a golden file, possibly changed (1.0.0 checksums are recomputed).
struct ValidCase {
    file: &'static str,
    base: &'static str,
    mutate: Mutation,
}

/// An invalid fixture: a golden file with one fault, reported at `pointer`.
struct InvalidCase {
    file: &'static str,
    base: &'static str,
    pointer: &'static str,
    mutate: Mutation,
}

const MINIMAL: &str = "v1.0.0/minimal.json";
const FULL: &str = "v1.0.0/full.json";
const SEED: &str = "v0.0.1/seed-example.json";
const TS: &str = "v0.0.1/ts-caf.json";
const TS_MIN: &str = "v0.0.1/ts-caf-minimal.json";

fn at<'a>(doc: &'a mut Value, pointer: &str) -> &'a mut Value {
    doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in the base document"))
}

/// Replaces the value at `pointer`, or adds it to its parent object.
fn set(doc: &mut Value, pointer: &str, v: Value) {
    if let Some(slot) = doc.pointer_mut(pointer) {
        *slot = v;
        return;
    }
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    at(doc, parent)
        .as_object_mut()
        .unwrap_or_else(|| panic!("{parent} is not an object"))
        .insert(key.to_string(), v);
}

fn remove(doc: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let removed = at(doc, parent).as_object_mut().unwrap().remove(key);
    assert!(removed.is_some(), "no {pointer} in the base document");
}

fn keep(_: &mut Value) {}

#[rustfmt::skip]
const VALID: &[ValidCase] = &[
    ValidCase { file: "v1.0.0-minimal.json", base: MINIMAL, mutate: keep },
    ValidCase { file: "v1.0.0-full.json", base: FULL, mutate: keep },
    ValidCase { file: "v1.0.0-from-seed-example.json", base: "v1.0.0/from-seed-example.json", mutate: keep },
    ValidCase { file: "v1.0.0-from-ts-caf.json", base: "v1.0.0/from-ts-caf.json", mutate: keep },
    ValidCase { file: "v1.0.0-from-ts-caf-minimal.json", base: "v1.0.0/from-ts-caf-minimal.json", mutate: keep },
    ValidCase {
        file: "v1.0.0-open-reason-word.json",
        base: MINIMAL,
        mutate: |d| set(d, "/metadata/checkpoint_reason", json!("budget_exhausted_2")),
    },
    ValidCase {
        file: "v1.0.0-longest-ids.json",
        base: MINIMAL,
        mutate: |d| {
            set(d, "/id", json!(format!("c{}", "k".repeat(127))));
            set(d, "/execution_id", json!("E".repeat(128)));
            set(d, "/parent_id", json!("a.b:c@d-e_f"));
        },
    },
    ValidCase {
        file: "v1.0.0-empty-strings-where-allowed.json",
        base: MINIMAL,
        mutate: |d| {
            set(d, "/metadata/name", json!(""));
            set(d, "/metadata/description", json!(""));
            set(d, "/metadata/agent_name", json!(""));
            set(d, "/metadata/branch", json!({}));
            set(d, "/metadata/labels", json!([]));
        },
    },
    ValidCase {
        file: "v1.0.0-year-zero-and-9999.json",
        base: FULL,
        mutate: |d| {
            set(d, "/timestamp", json!("9999-12-31T23:59:59.999999Z"));
            set(d, "/snapshot/thought_chain/thoughts/0/created_at", json!("0000-01-01T00:00:00.000000Z"));
        },
    },
    ValidCase {
        // Limits count characters, not bytes: every string here is at its limit in characters
        // and far beyond it in bytes.
        file: "v1.0.0-multibyte-strings-at-their-limits.json",
        base: FULL,
        mutate: |d| {
            set(d, "/agent_id", json!("é".repeat(256)));
            set(d, "/metadata/name", json!("ñ".repeat(256)));
            set(d, "/metadata/labels/0", json!("ß".repeat(128)));
            set(d, "/snapshot/thought_chain/thoughts/3/id", json!("思".repeat(256)));
            set(d, "/snapshot/tool_state/calls/4/id", json!("ü".repeat(256)));
            set(d, "/snapshot/tool_state/calls/4/tool_id", json!("日".repeat(256)));
        },
    },
    ValidCase { file: "v0.0.1-seed-example.json", base: SEED, mutate: keep },
    ValidCase { file: "v0.0.1-ts-caf.json", base: TS, mutate: keep },
    ValidCase { file: "v0.0.1-ts-caf-minimal.json", base: TS_MIN, mutate: keep },
    ValidCase {
        file: "v0.0.1-seed-nulls-fractions-and-unknown-fields.json",
        base: SEED,
        mutate: |d| {
            set(d, "/snapshot/thought_chain/0/confidence", Value::Null);
            at(d, "/snapshot/thought_chain/0").as_object_mut().unwrap().insert("parent_id".into(), Value::Null);
            set(d, "/metadata/duration_ms", json!(1200.75));
            set(d, "/metadata/checkpoint_reason", json!("Free text, any case"));
            set(d, "/timestamp", json!(0));
            d.as_object_mut().unwrap().insert("x_unknown".into(), json!({"kept": true}));
            set(
                d,
                "/snapshot/tool_state/calls",
                json!([{"id": "c1", "tool_id": "search", "args": {"q": "x"}, "result": null, "success": true, "error": null, "started_at": 1738790300000_u64, "completed_at": null}]),
            );
            set(d, "/snapshot/progress/total_tool_calls", json!(1));
        },
    },
    ValidCase {
        file: "v0.0.1-ts-every-reason-and-role.json",
        base: TS,
        mutate: |d| {
            set(d, "/metadata/checkpoint_reason", json!("tool_error"));
            set(d, "/snapshot/context/messages/0/content", json!(""));
            remove(d, "/parent/is_branch");
        },
    },
];

#[rustfmt::skip]
const INVALID: &[InvalidCase] = &[
    // ---- 1.0.0 ----
    InvalidCase { file: "v1.0.0-missing-snapshot.json", base: MINIMAL, pointer: "", mutate: |d| remove(d, "/snapshot") },
    InvalidCase { file: "v1.0.0-missing-integrity.json", base: MINIMAL, pointer: "", mutate: |d| remove(d, "/integrity") },
    InvalidCase { file: "v1.0.0-missing-parent-id.json", base: MINIMAL, pointer: "", mutate: |d| remove(d, "/parent_id") },
    InvalidCase { file: "v1.0.0-missing-metadata-reason.json", base: MINIMAL, pointer: "/metadata", mutate: |d| remove(d, "/metadata/checkpoint_reason") },
    InvalidCase { file: "v1.0.0-missing-thought-content.json", base: FULL, pointer: "/snapshot/thought_chain/thoughts/1", mutate: |d| remove(d, "/snapshot/thought_chain/thoughts/1/content") },
    InvalidCase { file: "v1.0.0-missing-tool-call-args.json", base: FULL, pointer: "/snapshot/tool_state/calls/0", mutate: |d| remove(d, "/snapshot/tool_state/calls/0/args") },
    InvalidCase { file: "v1.0.0-step-number-is-a-string.json", base: MINIMAL, pointer: "/metadata/step_number", mutate: |d| set(d, "/metadata/step_number", json!("7")) },
    InvalidCase { file: "v1.0.0-snapshot-is-an-array.json", base: MINIMAL, pointer: "/snapshot", mutate: |d| set(d, "/snapshot", json!([])) },
    InvalidCase { file: "v1.0.0-extensions-is-an-array.json", base: MINIMAL, pointer: "/extensions", mutate: |d| { d.as_object_mut().unwrap().insert("extensions".into(), json!([])); } },
    InvalidCase { file: "v1.0.0-pending-step-is-a-number.json", base: FULL, pointer: "/snapshot/progress/pending_steps/1", mutate: |d| set(d, "/snapshot/progress/pending_steps/1", json!(2)) },
    InvalidCase { file: "v1.0.0-negative-tokens-used.json", base: MINIMAL, pointer: "/metadata/tokens_used", mutate: |d| set(d, "/metadata/tokens_used", json!(-5)) },
    InvalidCase { file: "v1.0.0-negative-step-number-in-progress.json", base: MINIMAL, pointer: "/snapshot/progress/step_number", mutate: |d| set(d, "/snapshot/progress/step_number", json!(-1)) },
    InvalidCase { file: "v1.0.0-fractional-duration.json", base: MINIMAL, pointer: "/metadata/duration_ms", mutate: |d| set(d, "/metadata/duration_ms", json!(1.5)) },
    InvalidCase { file: "v1.0.0-confidence-above-one.json", base: FULL, pointer: "/snapshot/thought_chain/thoughts/0/confidence", mutate: |d| set(d, "/snapshot/thought_chain/thoughts/0/confidence", json!(1.01)) },
    InvalidCase { file: "v1.0.0-confidence-negative.json", base: FULL, pointer: "/snapshot/thought_chain/thoughts/0/confidence", mutate: |d| set(d, "/snapshot/thought_chain/thoughts/0/confidence", json!(-0.1)) },
    InvalidCase { file: "v1.0.0-id-path-traversal.json", base: MINIMAL, pointer: "/id", mutate: |d| set(d, "/id", json!("../../etc/passwd")) },
    InvalidCase { file: "v1.0.0-id-with-nul.json", base: MINIMAL, pointer: "/id", mutate: |d| set(d, "/id", json!("ckpt\u{0}x")) },
    InvalidCase { file: "v1.0.0-id-starts-with-dot.json", base: MINIMAL, pointer: "/id", mutate: |d| set(d, "/id", json!(".hidden")) },
    InvalidCase { file: "v1.0.0-id-too-long.json", base: MINIMAL, pointer: "/id", mutate: |d| set(d, "/id", json!("x".repeat(129))) },
    InvalidCase { file: "v1.0.0-execution-id-with-slash.json", base: MINIMAL, pointer: "/execution_id", mutate: |d| set(d, "/execution_id", json!("exec/1")) },
    InvalidCase { file: "v1.0.0-parent-id-with-dot-dot.json", base: MINIMAL, pointer: "/parent_id", mutate: |d| set(d, "/parent_id", json!("a..b")) },
    InvalidCase { file: "v1.0.0-agent-id-empty.json", base: MINIMAL, pointer: "/agent_id", mutate: |d| set(d, "/agent_id", json!("")) },
    InvalidCase { file: "v1.0.0-timestamp-epoch-millis.json", base: MINIMAL, pointer: "/timestamp", mutate: |d| set(d, "/timestamp", json!(1738790400000_u64)) },
    InvalidCase { file: "v1.0.0-timestamp-without-zone.json", base: MINIMAL, pointer: "/timestamp", mutate: |d| set(d, "/timestamp", json!("2025-02-05T21:20:00.000000")) },
    InvalidCase { file: "v1.0.0-timestamp-with-offset.json", base: MINIMAL, pointer: "/timestamp", mutate: |d| set(d, "/timestamp", json!("2025-02-05T22:20:00.000000+01:00")) },
    InvalidCase { file: "v1.0.0-timestamp-milliseconds-only.json", base: MINIMAL, pointer: "/timestamp", mutate: |d| set(d, "/timestamp", json!("2025-02-05T21:20:00.000Z")) },
    InvalidCase { file: "v1.0.0-timestamp-february-30.json", base: MINIMAL, pointer: "/timestamp", mutate: |d| set(d, "/timestamp", json!("2025-02-30T21:20:00.000000Z")) },
    InvalidCase { file: "v1.0.0-timestamp-hour-25.json", base: FULL, pointer: "/snapshot/tool_state/calls/0/started_at", mutate: |d| set(d, "/snapshot/tool_state/calls/0/started_at", json!("2025-02-05T25:00:00.000000Z")) },
    InvalidCase { file: "v1.0.0-unknown-top-level-field.json", base: MINIMAL, pointer: "", mutate: |d| { d.as_object_mut().unwrap().insert("x_custom".into(), json!({"note": "not allowed in 1.0.0"})); } },
    InvalidCase { file: "v1.0.0-extra-field-in-metadata.json", base: MINIMAL, pointer: "/metadata", mutate: |d| { at(d, "/metadata").as_object_mut().unwrap().insert("priority".into(), json!("high")); } },
    InvalidCase { file: "v1.0.0-extra-field-in-branch.json", base: FULL, pointer: "/metadata/branch", mutate: |d| { at(d, "/metadata/branch").as_object_mut().unwrap().insert("is_branch".into(), json!(true)); } },
    InvalidCase { file: "v1.0.0-extra-field-in-thought.json", base: FULL, pointer: "/snapshot/thought_chain/thoughts/2", mutate: |d| { at(d, "/snapshot/thought_chain/thoughts/2").as_object_mut().unwrap().insert("timestamp".into(), json!(1738790400000_u64)); } },
    InvalidCase { file: "v1.0.0-extra-field-in-snapshot.json", base: MINIMAL, pointer: "/snapshot", mutate: |d| { at(d, "/snapshot").as_object_mut().unwrap().insert("diff".into(), json!({})); } },
    InvalidCase { file: "v1.0.0-bad-tool-status.json", base: FULL, pointer: "/snapshot/tool_state/calls/0/status", mutate: |d| set(d, "/snapshot/tool_state/calls/0/status", json!("done")) },
    InvalidCase { file: "v1.0.0-tool-success-is-a-string.json", base: FULL, pointer: "/snapshot/tool_state/calls/0/success", mutate: |d| set(d, "/snapshot/tool_state/calls/0/success", json!("true")) },
    InvalidCase { file: "v1.0.0-reason-with-spaces.json", base: MINIMAL, pointer: "/metadata/checkpoint_reason", mutate: |d| set(d, "/metadata/checkpoint_reason", json!("Step Complete")) },
    InvalidCase { file: "v1.0.0-reason-camel-case.json", base: MINIMAL, pointer: "/metadata/checkpoint_reason", mutate: |d| set(d, "/metadata/checkpoint_reason", json!("stepCompleted")) },
    InvalidCase { file: "v1.0.0-reason-too-long.json", base: MINIMAL, pointer: "/metadata/checkpoint_reason", mutate: |d| set(d, "/metadata/checkpoint_reason", json!("a".repeat(65))) },
    InvalidCase { file: "v1.0.0-thought-type-upper-case.json", base: FULL, pointer: "/snapshot/thought_chain/thoughts/0/type", mutate: |d| set(d, "/snapshot/thought_chain/thoughts/0/type", json!("Planning")) },
    InvalidCase { file: "v1.0.0-duplicate-labels.json", base: FULL, pointer: "/metadata/labels", mutate: |d| set(d, "/metadata/labels", json!(["golden", "parser", "golden"])) },
    InvalidCase { file: "v1.0.0-empty-label.json", base: FULL, pointer: "/metadata/labels/1", mutate: |d| set(d, "/metadata/labels/1", json!("")) },
    InvalidCase { file: "v1.0.0-name-too-long.json", base: FULL, pointer: "/metadata/name", mutate: |d| set(d, "/metadata/name", json!("n".repeat(257))) },
    InvalidCase { file: "v1.0.0-integrity-not-sha256.json", base: MINIMAL, pointer: "/integrity", mutate: |d| set(d, "/integrity", json!("md5:d41d8cd98f00b204e9800998ecf8427e")) },
    InvalidCase { file: "v1.0.0-integrity-upper-case-hex.json", base: MINIMAL, pointer: "/integrity", mutate: |d| { let s = d["integrity"].as_str().unwrap().replace("sha256:", "").to_uppercase(); set(d, "/integrity", json!(format!("sha256:{s}"))); } },
    InvalidCase { file: "v1.0.0-schema-url-empty.json", base: MINIMAL, pointer: "/$schema", mutate: |d| set(d, "/$schema", json!("")) },
    // ---- 0.0.1, seed dialect ----
    InvalidCase { file: "v0.0.1-seed-timestamp-is-a-string.json", base: SEED, pointer: "/timestamp", mutate: |d| set(d, "/timestamp", json!("2025-02-05T21:20:00Z")) },
    InvalidCase { file: "v0.0.1-seed-negative-timestamp.json", base: SEED, pointer: "/snapshot/thought_chain/0/created_at", mutate: |d| set(d, "/snapshot/thought_chain/0/created_at", json!(-1)) },
    InvalidCase { file: "v0.0.1-seed-missing-progress.json", base: SEED, pointer: "/snapshot", mutate: |d| remove(d, "/snapshot/progress") },
    InvalidCase { file: "v0.0.1-seed-confidence-above-one.json", base: SEED, pointer: "/snapshot/thought_chain/0/confidence", mutate: |d| set(d, "/snapshot/thought_chain/0/confidence", json!(1.5)) },
    InvalidCase { file: "v0.0.1-seed-negative-step-number.json", base: SEED, pointer: "/metadata/step_number", mutate: |d| set(d, "/metadata/step_number", json!(-1)) },
    InvalidCase { file: "v0.0.1-seed-empty-id.json", base: SEED, pointer: "/id", mutate: |d| set(d, "/id", json!("")) },
    InvalidCase { file: "v0.0.1-seed-variables-is-an-array.json", base: SEED, pointer: "/snapshot/context/variables", mutate: |d| set(d, "/snapshot/context/variables", json!([])) },
    // ---- 0.0.1, TypeScript dialect ----
    InvalidCase { file: "v0.0.1-ts-unknown-reason.json", base: TS, pointer: "/metadata/checkpoint_reason", mutate: |d| set(d, "/metadata/checkpoint_reason", json!("finished")) },
    InvalidCase { file: "v0.0.1-ts-unknown-thought-type.json", base: TS, pointer: "/snapshot/thought_chain/steps/0/type", mutate: |d| set(d, "/snapshot/thought_chain/steps/0/type", json!("musing")) },
    InvalidCase { file: "v0.0.1-ts-bad-tool-status.json", base: TS, pointer: "/snapshot/tool_state/completed/0/status", mutate: |d| set(d, "/snapshot/tool_state/completed/0/status", json!("done")) },
    InvalidCase { file: "v0.0.1-ts-negative-duration.json", base: TS, pointer: "/snapshot/tool_state/completed/1/duration_ms", mutate: |d| set(d, "/snapshot/tool_state/completed/1/duration_ms", json!(-3)) },
    InvalidCase { file: "v0.0.1-ts-metadata-without-agent-id.json", base: TS_MIN, pointer: "/metadata", mutate: |d| remove(d, "/metadata/agent_id") },
    InvalidCase { file: "v0.0.1-ts-message-with-unknown-role.json", base: TS, pointer: "/snapshot/context/messages/0/role", mutate: |d| set(d, "/snapshot/context/messages/0/role", json!("robot")) },
    InvalidCase { file: "v0.0.1-ts-pending-holds-objects.json", base: TS, pointer: "/snapshot/tool_state/pending/0", mutate: |d| set(d, "/snapshot/tool_state/pending/0", json!({"id": "call_06"})) },
    InvalidCase { file: "v0.0.1-ts-total-steps-estimate-zero.json", base: TS, pointer: "/snapshot/progress/total_steps_estimate", mutate: |d| set(d, "/snapshot/progress/total_steps_estimate", json!(0)) },
    InvalidCase { file: "v0.0.1-ts-memory-importance-above-one.json", base: TS, pointer: "/snapshot/context/memory/0/importance", mutate: |d| set(d, "/snapshot/context/memory/0/importance", json!(8)) },
    InvalidCase { file: "v0.0.1-ts-alternative-without-reason.json", base: TS, pointer: "/snapshot/thought_chain/steps/0/alternatives/0", mutate: |d| remove(d, "/snapshot/thought_chain/steps/0/alternatives/0/reason_rejected") },
    InvalidCase { file: "v0.0.1-ts-parent-without-checkpoint-id.json", base: TS, pointer: "/parent", mutate: |d| remove(d, "/parent/checkpoint_id") },
    InvalidCase { file: "v0.0.1-ts-thought-chain-is-a-string.json", base: TS_MIN, pointer: "/snapshot/thought_chain", mutate: |d| set(d, "/snapshot/thought_chain", json!("steps")) },
];

fn build(base: &str, mutate: Mutation, fix_integrity: bool) -> Vec<u8> {
    let mut doc = read_json(&fixtures().join(base));
    mutate(&mut doc);
    if fix_integrity && doc.get("integrity").is_some() {
        let i = integrity_of(&doc);
        doc["integrity"] = json!(i);
    }
    let mut out = serde_json::to_vec_pretty(&doc).unwrap();
    out.push(b'\n');
    out
}

fn listed(dir: &str) -> BTreeSet<String> {
    std::fs::read_dir(fixtures().join("schema").join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Writes the missing fixtures (never overwrites one).
#[test]
#[ignore = "writes fixtures: CAF_WRITE_FIXTURES=1 cargo test -p caf-tests --test schema_fixtures -- --ignored"]
fn write_schema_fixtures() {
    if std::env::var_os("CAF_WRITE_FIXTURES").is_none() {
        eprintln!("set CAF_WRITE_FIXTURES=1 to write the missing fixtures");
        return;
    }
    let files = VALID
        .iter()
        .map(|c| (format!("valid/{}", c.file), build(c.base, c.mutate, true)))
        .chain(INVALID.iter().map(|c| {
            (
                format!("invalid/{}", c.file),
                build(c.base, c.mutate, false),
            )
        }));
    for (rel, bytes) in files {
        let path = fixtures().join("schema").join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if !path.exists() {
            std::fs::write(&path, bytes).unwrap();
            eprintln!("wrote {rel}");
        }
    }
}

#[test]
fn committed_fixtures_are_what_the_recipes_make() {
    let names = |cases: &mut dyn Iterator<Item = &'static str>| -> BTreeSet<String> {
        cases.map(String::from).collect()
    };
    assert_eq!(listed("valid"), names(&mut VALID.iter().map(|c| c.file)));
    assert_eq!(
        listed("invalid"),
        names(&mut INVALID.iter().map(|c| c.file))
    );
    for c in VALID {
        let path = fixtures().join("schema/valid").join(c.file);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            build(c.base, c.mutate, true),
            "{}",
            c.file
        );
    }
    for c in INVALID {
        let path = fixtures().join("schema/invalid").join(c.file);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            build(c.base, c.mutate, false),
            "{}",
            c.file
        );
        assert_ne!(
            read_json(&path),
            read_json(&fixtures().join(c.base)),
            "{}: the recipe changes nothing",
            c.file
        );
    }
}

#[test]
fn every_valid_fixture_passes_its_schema() {
    let mut versions = BTreeSet::new();
    for name in listed("valid") {
        let doc = read_json(&fixtures().join("schema/valid").join(&name));
        versions.insert(doc["version"].as_str().unwrap().to_string());
        let errs = errors(&doc);
        assert!(errs.is_empty(), "{name} should pass: {errs:#?}");
    }
    assert_eq!(versions, ["0.0.1".to_string(), "1.0.0".to_string()].into());
}

#[test]
fn every_invalid_fixture_fails_its_schema_where_expected() {
    assert!(INVALID.len() >= 15);
    for c in INVALID {
        let doc = read_json(&fixtures().join("schema/invalid").join(c.file));
        let errs = errors(&doc);
        assert!(!errs.is_empty(), "{} should fail its schema", c.file);
        assert!(
            errs.iter().any(|(p, _)| p == c.pointer),
            "{} should fail at {:?}, got {errs:#?}",
            c.file,
            c.pointer
        );
    }
}

/// caf embeds the same schemas: what they refuse, decoding refuses as a schema error at the
/// same place; what they accept, caf loads.
#[test]
fn caf_agrees_with_the_schemas() {
    let limits = Limits::default();
    for name in listed("valid") {
        let bytes = std::fs::read(fixtures().join("schema/valid").join(&name)).unwrap();
        if let Err(e) = decode(&bytes, &limits) {
            panic!("{name}: caf refuses a valid document: {e}");
        }
    }
    for c in INVALID {
        let bytes = std::fs::read(fixtures().join("schema/invalid").join(c.file)).unwrap();
        match decode(&bytes, &limits) {
            Err(LoadError::Schema { violations, .. }) => assert!(
                violations.iter().any(|v| v.pointer == c.pointer),
                "{}: {violations:#?}",
                c.file
            ),
            other => panic!("{}: expected a schema error, got {other:?}", c.file),
        }
    }
}

#[test]
fn embedded_schemas_are_the_files() {
    for (version, text) in caf_core::format::versions::VERSIONS
        .iter()
        .map(|v| (v.version, v.schema))
    {
        let file = std::fs::read_to_string(
            root().join(format!("../schemas/checkpoint-{version}.schema.json")),
        )
        .unwrap();
        assert_eq!(file, text, "{version}");
        assert_eq!(
            caf_core::format::schema::schema_text(version),
            Some(text),
            "{version}"
        );
    }
}
