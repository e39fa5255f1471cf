//! The fast restore path ([`caf_core::format::decode_known`]): a file whose bytes are what the
//! store's index recorded is typed straight from its bytes, and the result is exactly what the
//! full [`decode`] gives; any file that differs from the record goes through [`decode`] and is
//! refused or reported exactly as before.
//!
//! The schema-invalid documents that a forged record could vouch for are in
//! `restore_fast_forged.rs`.

#![allow(clippy::unwrap_used)]

use caf_core::format::{
    decode, decode_known, decode_known_file, decode_known_shared, encode, fast_path,
    fast_path_file, file_digest, Limits, LoadError, PARALLEL_HASH_MIN_BYTES,
};
use caf_core::store::stated_integrity;
use caf_core::workload::agent_run_step;
use caf_core::{
    CheckpointManager, CheckpointOptions, CheckpointReason, CheckpointStore, Error, RuntimeState,
    CURRENT_VERSION,
};
use caf_tests::cli::fixtures;
use caf_tests::gen::{arb_checkpoint, checkpoint, full_checkpoint};
use caf_tests::TempFileStore;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// Every golden (valid) file: the example files of each version and the valid schema fixtures.
fn golden_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["v0.0.1", "v1.0.0", "v1.1.0", "schema/valid"] {
        for e in std::fs::read_dir(fixtures().join(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 20, "golden files: {out:?}");
    out
}

fn read(path: &PathBuf) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The integrity a store records for `bytes`, as `FileStore::save` and reconcile do.
fn recorded(bytes: &[u8]) -> String {
    stated_integrity(bytes).expect("an integrity line")
}

/// `decode_known` with `known` gives what `decode` gives, error included.
fn same_as_decode(bytes: &[u8], limits: &Limits, known: &str) -> Result<(), LoadError> {
    let full = decode(bytes, limits);
    assert_eq!(decode_known(bytes, limits, known), full);
    full.map(|_| ())
}

#[test]
fn every_golden_file_decodes_the_same_on_the_fast_path() {
    let limits = Limits::default();
    let mut fast = 0;
    for path in golden_files() {
        let bytes = read(&path);
        let full = decode(&bytes, &limits).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Some(known) = stated_integrity(&bytes) {
            let on_fast_path = fast_path(&bytes, &limits, &known);
            if full.source_version == CURRENT_VERSION {
                assert_eq!(on_fast_path.as_ref(), Some(&full), "{}", path.display());
                fast += 1;
            } else {
                assert_eq!(on_fast_path, None, "{}: an older version", path.display());
            }
            assert_eq!(decode_known(&bytes, &limits, &known).unwrap(), full);
        }
        // The same content written in the current format takes the fast path, with the same
        // result.
        let current = encode(&full.checkpoint).unwrap();
        let again = fast_path(&current, &limits, &recorded(&current));
        assert_eq!(again.as_ref(), Some(&decode(&current, &limits).unwrap()));
        assert_eq!(
            again.unwrap().checkpoint,
            full.checkpoint,
            "{}",
            path.display()
        );
    }
    assert!(
        fast >= 2,
        "current-version golden files on the fast path: {fast}"
    );
}

#[test]
fn workload_checkpoints_decode_the_same_on_the_fast_path_and_through_the_store() {
    let store = TempFileStore::new();
    let manager = CheckpointManager::new(store.store());
    let mut state = RuntimeState::new("fast-path-agent");
    let limits = Limits::default();
    let mut saved = Vec::new();
    for s in 1..=100 {
        agent_run_step(&mut state, s).unwrap();
        let c = manager
            .checkpoint(
                &mut state,
                CheckpointOptions::new(CheckpointReason::StepCompleted),
            )
            .unwrap();
        let bytes = std::fs::read(store.path_of(&c.id)).unwrap();
        let known = recorded(&bytes);
        // What the index recorded for the file is the checksum it states.
        let indexed = store.indexed_checksums().unwrap();
        assert_eq!(indexed[&c.id].as_deref(), Some(known.as_str()));
        let on_fast_path = fast_path(&bytes, &limits, &known).expect("the fast path");
        assert_eq!(on_fast_path, decode(&bytes, &limits).unwrap());
        assert_eq!(on_fast_path.checkpoint, c);
        saved.push(c);
    }
    assert!(
        std::fs::metadata(store.path_of(&saved[99].id))
            .unwrap()
            .len()
            > 160_000
    );
    let last = saved.last().unwrap();
    assert_eq!(
        store.latest(&last.execution_id).unwrap().as_ref(),
        Some(last)
    );
    for c in saved.iter().step_by(9) {
        assert_eq!(&store.load(&c.id).unwrap(), c);
    }
    // A store opened afresh on the same directory reads the record from its log.
    let reopened = caf_core::FileStore::open(store.path()).unwrap();
    assert_eq!(
        reopened.latest(&last.execution_id).unwrap().as_ref(),
        Some(last)
    );
}

#[test]
fn the_helper_thread_path_gives_what_decode_gives() {
    let (c, bytes) = big_checkpoint();
    let known = recorded(&bytes);
    let limits = Limits::default();
    let shared = Arc::new(bytes.clone());
    for _ in 0..20 {
        assert_eq!(
            decode_known_shared(&shared, &limits, &known)
                .unwrap()
                .checkpoint,
            c
        );
    }
    // Damage anywhere: the helper's checksum (or the parse) tells, and the full path reports.
    for at in [0, 100, 5_000, bytes.len() / 2, bytes.len() - 3] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        let damaged = Arc::new(damaged);
        assert_eq!(
            decode_known_shared(&damaged, &limits, &known),
            decode(&damaged, &limits),
            "byte {at}"
        );
    }
    // A stale record: valid bytes, another checksum.
    let stale = format!("sha256:{}", "1".repeat(64));
    assert_eq!(
        decode_known_shared(&shared, &limits, &stale)
            .unwrap()
            .checkpoint,
        c
    );
}

/// The last checkpoint of a 100-step agent run (~169 KB: the helper thread's size) and its
/// bytes.
fn big_checkpoint() -> (caf_core::Checkpoint, Vec<u8>) {
    let mut state = RuntimeState::new("digest-agent");
    for s in 1..=100 {
        agent_run_step(&mut state, s).unwrap();
    }
    let manager = CheckpointManager::new(caf_core::MemoryStore::new());
    let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
    let c = manager.checkpoint(&mut state, options).unwrap();
    let bytes = encode(&c).unwrap();
    assert!(bytes.len() >= PARALLEL_HASH_MIN_BYTES);
    (c, bytes)
}

/// The integrity a document states, wherever its layout puts it.
fn stated(bytes: &[u8]) -> String {
    let doc: Value = serde_json::from_slice(bytes).unwrap();
    doc["integrity"].as_str().unwrap().to_string()
}

/// `decode_known_file` with the record of `recorded_bytes` (their integrity and digest) gives
/// what `decode` gives for `bytes`, error included.
fn same_as_decode_with_digest(bytes: &[u8], recorded_bytes: &[u8]) -> Result<(), LoadError> {
    let limits = Limits::default();
    let (known, digest) = (stated(recorded_bytes), file_digest(recorded_bytes));
    let full = decode(bytes, &limits);
    let shared = Arc::new(bytes.to_vec());
    assert_eq!(
        decode_known_file(&shared, &limits, &known, Some(&digest)),
        full
    );
    full.map(|_| ())
}

#[test]
fn the_digest_path_gives_what_decode_gives_and_types_the_thought_chain_beside() {
    let (c, bytes) = big_checkpoint();
    let (known, digest) = (recorded(&bytes), file_digest(&bytes));
    let limits = Limits::default();
    let on_fast_path = fast_path_file(&bytes, &limits, &known, Some(&digest));
    assert_eq!(
        on_fast_path.as_ref(),
        Some(&decode(&bytes, &limits).unwrap())
    );
    let shared = Arc::new(bytes.clone());
    // Whoever types the thought chain (the helper, or this thread having taken it back).
    for _ in 0..30 {
        let decoded = decode_known_file(&shared, &limits, &known, Some(&digest)).unwrap();
        assert_eq!(decoded.checkpoint, c);
    }
    // Damage anywhere: the digest tells, and the full path reports.
    for at in [
        0,
        100,
        5_000,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 3,
    ] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        assert!(fast_path_file(&damaged, &limits, &known, Some(&digest)).is_none());
        let err = same_as_decode_with_digest(&damaged, &bytes);
        assert!(err.is_err(), "byte {at}");
    }
    // A stale or malformed digest: the file is decoded in full, or on the checksum's fast path.
    let other = file_digest(b"other bytes");
    for stale in [other.as_str(), "blake3:", "sha256:0", ""] {
        let decoded = decode_known_file(&shared, &limits, &known, Some(stale)).unwrap();
        assert_eq!(decoded.checkpoint, c, "{stale:?}");
    }
    assert!(fast_path_file(&bytes, &limits, &known, Some(&other)).is_none());
    assert!(fast_path_file(&bytes, &limits, &known, Some("blake3:")).is_some());
    // The digest proves the bytes, but the record's integrity must still be what they state.
    let stale_integrity = format!("sha256:{}", "1".repeat(64));
    assert!(fast_path_file(&bytes, &limits, &stale_integrity, Some(&digest)).is_none());
    assert_eq!(
        decode_known_file(&shared, &limits, &stale_integrity, Some(&digest))
            .unwrap()
            .checkpoint,
        c
    );
}

#[test]
fn bytes_that_are_not_utf8_are_refused_as_before_wherever_they_are() {
    // The record holds the damaged file's own digest (a forged entry, or one made of a file
    // damaged before it was recorded): the digest proves the bytes, so only the UTF-8 checks
    // stand between them and a checkpoint. The helper validates the thought chain's text and
    // the caller the rest, so each part is tried: before the chain, in it, after it.
    let (_, bytes) = big_checkpoint();
    let text = std::str::from_utf8(&bytes).unwrap();
    let in_head = text.find("\"agent_id\": \"").unwrap() + 14;
    let chain = text.find("\n    \"thought_chain\": ").unwrap();
    let in_chain = chain + text[chain..].find("\"content\": \"").unwrap() + 13;
    let tools = text.find("\n    \"tool_state\": ").unwrap();
    let in_tail = tools + text[tools..].find("\"result\": \"").unwrap() + 12;
    for (what, at) in [
        ("before the chain", in_head),
        ("in the chain", in_chain),
        ("after it", in_tail),
    ] {
        for bad in [&[0xff_u8][..], &[0xc3], &[0xed, 0xa0, 0x80]] {
            let mut damaged = bytes.clone();
            damaged.splice(at..at, bad.iter().copied());
            assert!(std::str::from_utf8(&damaged).is_err());
            let limits = Limits::default();
            let full = decode(&damaged, &limits);
            assert!(full.is_err(), "{what}: {bad:?}");
            let (known, digest) = (recorded(&bytes), file_digest(&damaged));
            let shared = Arc::new(damaged);
            assert_eq!(
                decode_known_file(&shared, &limits, &known, Some(&digest)),
                full,
                "{what}: {bad:?}"
            );
        }
    }
}

#[test]
fn the_thought_chain_typed_beside_is_the_one_the_parse_found_whatever_the_layout() {
    let (c, bytes) = big_checkpoint();
    let limits = Limits::default();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();

    // Laid out on one line: nothing for the helper to find; typed here.
    let compact = {
        let pretty = with_fresh_integrity(doc.clone());
        let value: Value = serde_json::from_slice(&pretty).unwrap();
        let mut out = serde_json::to_vec(&value).unwrap();
        // The fast path reads only documents that end as caf writes them.
        let tail = format!(",\"version\":\"{CURRENT_VERSION}\"}}");
        assert!(out.ends_with(tail.as_bytes()));
        out.truncate(out.len() - tail.len());
        out.extend_from_slice(format!(",\n  \"version\": \"{CURRENT_VERSION}\"\n}}\n").as_bytes());
        out
    };
    same_as_decode_with_digest(&compact, &compact).unwrap();
    let shared = Arc::new(compact.clone());
    let (known, digest) = (stated(&compact), file_digest(&compact));
    assert_eq!(
        decode_known_file(&shared, &limits, &known, Some(&digest))
            .unwrap()
            .checkpoint,
        c
    );

    // A decoy: the agent's variables hold a `thought_chain` that is a valid (empty) chain,
    // followed by a `tool_state`, both on lines indented as the snapshot's own members are. The
    // helper finds and types the decoy; the parse finds the real chain, which is what loads.
    let mut with_decoy = doc;
    let vars = with_decoy["snapshot"]["context"]["variables"]
        .as_object_mut()
        .unwrap();
    vars.insert("thought_chain".into(), json!({"thoughts": []}));
    vars.insert("tool_state".into(), json!(5));
    let mut expected = c.clone();
    expected
        .snapshot
        .context
        .variables
        .insert("thought_chain".into(), json!({"thoughts": []}));
    expected
        .snapshot
        .context
        .variables
        .insert("tool_state".into(), json!(5));
    let text = String::from_utf8(with_fresh_integrity(with_decoy)).unwrap();
    let decoy = text
        .replacen(
            "\n        \"thought_chain\": {",
            "\n    \"thought_chain\": {",
            1,
        )
        .replacen(
            ",\n        \"tool_state\": 5",
            ",\n    \"tool_state\": 5",
            1,
        );
    assert_ne!(decoy, text, "the decoy lines");
    assert!(
        decoy.find("\n    \"thought_chain\": ") < text.find("\n    \"thought_chain\": "),
        "the decoy comes first"
    );
    let decoy = decoy.into_bytes();
    same_as_decode_with_digest(&decoy, &decoy).unwrap();
    let shared = Arc::new(decoy.clone());
    let (known, digest) = (recorded(&decoy), file_digest(&decoy));
    for _ in 0..10 {
        let loaded = decode_known_file(&shared, &limits, &known, Some(&digest))
            .unwrap()
            .checkpoint;
        assert_eq!(loaded.snapshot.thought_chain.thoughts.len(), 100);
        assert_eq!(loaded, expected);
    }
}

#[test]
fn a_store_records_each_files_digest_and_restores_without_it_too() {
    let store = TempFileStore::new();
    let manager = CheckpointManager::new(store.store());
    let mut state = RuntimeState::new("digest-store-agent");
    let mut last = None;
    for s in 1..=60 {
        agent_run_step(&mut state, s).unwrap();
        let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
        last = Some(manager.checkpoint(&mut state, options).unwrap());
    }
    let last = last.unwrap();
    let index = caf_core::store::read_index(store.path()).unwrap().unwrap();
    assert_eq!(index.entries.len(), 60);
    for (id, entry) in &index.entries {
        let bytes = std::fs::read(store.path_of(id)).unwrap();
        assert_eq!(entry.digest.as_deref(), Some(file_digest(&bytes).as_str()));
        assert_eq!(
            entry.integrity.as_deref(),
            stated_integrity(&bytes).as_deref()
        );
    }
    assert_eq!(
        store.latest(&last.execution_id).unwrap().as_ref(),
        Some(&last)
    );
    // An index written by a caf before the digest: its entries are trusted as before (same
    // size and time), restored on the checksum's fast path.
    let log = store.path().join(".caf").join("index.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let member = ",\"digest\":\"blake3:";
    let mut older = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(member) {
        older.push_str(&rest[..at]);
        rest = &rest[at + member.len() + 64 + 1..];
    }
    older.push_str(rest);
    assert_eq!(text.matches(member).count(), 60);
    std::fs::write(&log, older.as_bytes()).unwrap();
    let reopened = caf_core::FileStore::open(store.path()).unwrap();
    let index = caf_core::store::read_index(store.path()).unwrap().unwrap();
    assert!(index.entries.values().all(|e| e.digest.is_none()));
    assert_eq!(
        reopened.latest(&last.execution_id).unwrap().as_ref(),
        Some(&last)
    );
    // Rebuilding the index reads every file again, and records their digests.
    reopened.rebuild_index().unwrap();
    let index = caf_core::store::read_index(store.path()).unwrap().unwrap();
    assert!(index.entries.values().all(|e| e.digest.is_some()));
    assert_eq!(
        reopened.latest(&last.execution_id).unwrap().as_ref(),
        Some(&last)
    );
}

/// The bytes of `full_checkpoint`, and the integrity a store records for them.
fn full_file() -> (String, String) {
    let bytes = encode(&full_checkpoint("ckpt_full", "exec_fast")).unwrap();
    let known = recorded(&bytes);
    (String::from_utf8(bytes).unwrap(), known)
}

/// Re-encodes a document value the way caf lays files out, with a fresh integrity that matches
/// its (changed) content.
fn with_fresh_integrity(mut doc: Value) -> Vec<u8> {
    doc.as_object_mut().unwrap().remove("integrity");
    let fresh = caf_core::format::integrity_of(&doc);
    doc["integrity"] = json!(fresh);
    let mut out = serde_json::to_vec_pretty(&doc).unwrap();
    out.push(b'\n');
    out
}

#[test]
fn bytes_other_than_the_recorded_ones_take_the_full_path() {
    let (text, known) = full_file();
    let limits = Limits::default();
    let doc: Value = serde_json::from_str(&text).unwrap();

    // One byte of a thought changed: the checksum no longer matches.
    let at = text.find("\"content\": \"h").unwrap() + 12;
    let mut changed = text.clone().into_bytes();
    changed[at] = b'j';
    assert!(fast_path(&changed, &limits, &known).is_none());
    let err = same_as_decode(&changed, &limits, &known).unwrap_err();
    assert!(matches!(err, LoadError::Corrupted { .. }), "{err}");

    // A duplicate key, at the top level and inside the agent's own data.
    let top = text.replacen("{\n", "{\n  \"agent_id\": \"other\",\n", 1);
    let err = same_as_decode(top.as_bytes(), &limits, &known).unwrap_err();
    assert!(matches!(err, LoadError::DuplicateKey { .. }), "{err}");
    let vars = "\"variables\": {\n";
    let nested = text.replacen(
        vars,
        &format!("{vars}        \"x\": 1,\n        \"x\": 2,\n"),
        1,
    );
    assert_ne!(nested, text);
    let err = same_as_decode(nested.as_bytes(), &limits, &known).unwrap_err();
    assert!(matches!(err, LoadError::DuplicateKey { .. }), "{err}");

    // Schema-invalid content with a checksum of its own: `null` where the schema wants a
    // string, which the typed model alone would read as absent.
    let mut null_name = doc.clone();
    null_name["metadata"]["name"] = Value::Null;
    let null_name = with_fresh_integrity(null_name);
    assert!(fast_path(&null_name, &limits, &known).is_none());
    let err = same_as_decode(&null_name, &limits, &known).unwrap_err();
    assert!(matches!(err, LoadError::Schema { .. }), "{err}");

    // A stale record: the file was saved again with other (valid) content.
    let other = encode(&checkpoint("ckpt_full", "exec_fast", 5)).unwrap();
    assert!(fast_path(&other, &limits, &known).is_none());
    same_as_decode(&other, &limits, &known).unwrap();

    // An older version, with the checksum it states.
    let old = read(&fixtures().join("v1.0.0/full.json"));
    assert!(fast_path(&old, &limits, &recorded(&old)).is_none());
    same_as_decode(&old, &limits, &recorded(&old)).unwrap();

    // A record that is not a checksum at all.
    assert!(fast_path(text.as_bytes(), &limits, "sha256:0").is_none());
    same_as_decode(text.as_bytes(), &limits, "sha256:0").unwrap();
}

/// The integrity line of `text` (with its newline) and `text` without it.
fn split_integrity_line(text: &str) -> (String, String) {
    let start = text.find("\n  \"integrity\": ").unwrap() + 1;
    let end = start + text[start..].find('\n').unwrap() + 1;
    (
        text[start..end].to_string(),
        format!("{}{}", &text[..start], &text[end..]),
    )
}

#[test]
fn the_integrity_line_must_be_a_top_level_member() {
    let (text, known) = full_file();
    let limits = Limits::default();
    let (line, rest) = split_integrity_line(&text);

    // Moved into the agent's variables: the rest of the file still hashes to the record, but
    // the document is another one (no top-level integrity, a new variable).
    let vars = "\"variables\": {\n";
    let nested = rest.replacen(vars, &format!("{vars}{line}"), 1);
    assert_ne!(nested, rest);
    assert!(fast_path(nested.as_bytes(), &limits, &known).is_none());
    let err = same_as_decode(nested.as_bytes(), &limits, &known).unwrap_err();
    assert!(matches!(err, LoadError::Schema { .. }), "{err}");

    // Moved to another place among the top-level members: the same document.
    let moved = rest.replacen("{\n", &format!("{{\n{line}"), 1);
    assert_ne!(moved, text);
    let on_fast_path = fast_path(moved.as_bytes(), &limits, &known);
    assert_eq!(
        on_fast_path,
        Some(decode(moved.as_bytes(), &limits).unwrap())
    );
    assert_eq!(
        on_fast_path.unwrap(),
        decode(text.as_bytes(), &limits).unwrap()
    );

    // Stated twice: refused as a duplicate key, as before.
    let twice = text.replacen("{\n", &format!("{{\n{line}"), 1);
    let err = same_as_decode(twice.as_bytes(), &limits, &known).unwrap_err();
    assert!(matches!(err, LoadError::DuplicateKey { .. }), "{err}");
}

#[test]
fn the_limits_apply_on_the_fast_path() {
    // Variables nested so that the document is exactly `depth` levels deep: the root object,
    // snapshot, context, variables, then `depth - 4` arrays.
    let at_depth = |depth: usize| {
        let mut v = json!([]);
        for _ in 0..depth - 5 {
            v = json!([v]);
        }
        let mut c = checkpoint("ckpt_deep", "exec_deep", 0);
        c.snapshot.context.variables.insert("deep".into(), v);
        encode(&c).unwrap()
    };
    for max_depth in [1, 5, 6, 7, 8, 10, 20, 63, 64, 100, 200] {
        let limits = Limits {
            max_depth,
            ..Limits::default()
        };
        for depth in [6, 7, 8, 9, 10, 11, 20, 21, 62, 63, 64] {
            let bytes = at_depth(depth);
            let known = recorded(&bytes);
            let full = decode(&bytes, &limits);
            assert_eq!(
                full.is_ok(),
                depth <= max_depth.min(120),
                "depth {depth}, max {max_depth}: {full:?}"
            );
            let fast = fast_path(&bytes, &limits, &known);
            assert_eq!(fast.as_ref(), full.as_ref().ok(), "{depth} / {max_depth}");
            assert_eq!(decode_known(&bytes, &limits, &known), full);
        }
    }
    // Bytes.
    let bytes = at_depth(10);
    let known = recorded(&bytes);
    let at_limit = Limits {
        max_bytes: bytes.len() as u64,
        ..Limits::default()
    };
    assert!(fast_path(&bytes, &at_limit, &known).is_some());
    let below = Limits {
        max_bytes: bytes.len() as u64 - 1,
        ..Limits::default()
    };
    assert!(fast_path(&bytes, &below, &known).is_none());
    let err = same_as_decode(&bytes, &below, &known).unwrap_err();
    assert!(matches!(err, LoadError::TooLarge { .. }), "{err}");
}

#[test]
fn a_store_refuses_a_changed_file_as_before() {
    let store = TempFileStore::new();
    let c = full_checkpoint("ckpt_store", "exec_store");
    store.save(&c).unwrap();
    let path = store.path_of(&c.id);
    assert_eq!(store.load(&c.id).unwrap(), c);
    let text = std::fs::read_to_string(&path).unwrap();
    let load_error = |store: &TempFileStore| match store.load(&c.id) {
        Err(Error::Load { error, .. }) => error,
        other => panic!("expected a load error, got {other:?}"),
    };

    // One byte changed.
    let changed = text.replacen("\"content\": \"h", "\"content\": \"j", 1);
    assert_ne!(changed, text);
    std::fs::write(&path, &changed).unwrap();
    let err = load_error(&store);
    assert_eq!(
        Err(err.clone()),
        decode(changed.as_bytes(), &Limits::default())
    );
    assert!(matches!(err, LoadError::Corrupted { .. }), "{err}");

    // Schema-invalid, with a checksum that matches its content.
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["metadata"]["name"] = Value::Null;
    let null_name = with_fresh_integrity(doc);
    std::fs::write(&path, &null_name).unwrap();
    let err = load_error(&store);
    assert_eq!(Err(err.clone()), decode(&null_name, &Limits::default()));
    assert!(matches!(err, LoadError::Schema { .. }), "{err}");

    // Put back: loads again.
    std::fs::write(&path, &text).unwrap();
    assert_eq!(store.load(&c.id).unwrap(), c);
}

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(48)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_fast_path_gives_what_decode_gives(c in arb_checkpoint()) {
        let bytes = encode(&c).unwrap();
        let known = recorded(&bytes);
        let fast = fast_path(&bytes, &Limits::default(), &known);
        prop_assert_eq!(fast.as_ref(), Some(&decode(&bytes, &Limits::default()).unwrap()));
        prop_assert_eq!(fast.unwrap().checkpoint, c);
    }

    #[test]
    fn the_digest_path_gives_what_decode_gives(c in arb_checkpoint()) {
        let bytes = encode(&c).unwrap();
        let (known, digest) = (recorded(&bytes), file_digest(&bytes));
        let fast = fast_path_file(&bytes, &Limits::default(), &known, Some(&digest));
        prop_assert_eq!(fast.as_ref(), Some(&decode(&bytes, &Limits::default()).unwrap()));
        let shared = Arc::new(bytes);
        let decoded = decode_known_file(&shared, &Limits::default(), &known, Some(&digest));
        prop_assert_eq!(decoded.unwrap().checkpoint, c);
    }

    #[test]
    fn a_changed_byte_never_takes_the_fast_path(
        c in arb_checkpoint(),
        flips in proptest::collection::vec((any::<Index>(), 1u8..=255), 8),
    ) {
        let bytes = encode(&c).unwrap();
        let known = recorded(&bytes);
        for (at, mask) in flips {
            let mut damaged = bytes.clone();
            damaged[at.index(bytes.len())] ^= mask;
            prop_assert!(fast_path(&damaged, &Limits::default(), &known).is_none());
            let digest = file_digest(&bytes);
            prop_assert!(
                fast_path_file(&damaged, &Limits::default(), &known, Some(&digest)).is_none()
            );
            prop_assert_eq!(
                decode_known_file(&Arc::new(damaged.clone()), &Limits::default(), &known, Some(&digest)),
                decode(&damaged, &Limits::default())
            );
            prop_assert_eq!(
                decode_known(&damaged, &Limits::default(), &known),
                decode(&damaged, &Limits::default())
            );
        }
    }
}
