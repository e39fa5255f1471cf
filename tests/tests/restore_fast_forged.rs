//! What the fast restore path ([`caf_core::format::decode_known`]) does with a file that its
//! record vouches for although the content is hostile or schema-invalid: a forged or mistaken
//! index entry. Every hostile file is still refused exactly as [`decode`] refuses it. A
//! schema-invalid document of the current version with a matching checksum is refused too,
//! except for the few spellings the typed model reads as a valid value (listed below): those
//! load as a checkpoint that caf could have written itself.

#![allow(clippy::unwrap_used)]

use caf_core::format::{
    decode, decode_known, decode_known_file, encode, fast_path, fast_path_file, file_digest,
    integrity_of, Limits,
};
use caf_core::store::stated_integrity;
use caf_core::CURRENT_VERSION;
use caf_tests::cli::fixtures;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

fn json_files(dir: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(fixtures().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

const SMALL: Limits = Limits {
    max_bytes: 64 * 1024,
    max_depth: 64,
};

#[test]
fn hostile_files_are_refused_as_before_whatever_the_record_says() {
    let golden = std::fs::read(fixtures().join("v1.1.0/full.json")).unwrap();
    let golden_integrity = stated_integrity(&golden).unwrap();
    let zeros = format!("sha256:{}", "0".repeat(64));
    let files = json_files("hostile");
    assert!(files.len() >= 30);
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let mut records = vec![golden_integrity.clone(), zeros.clone()];
        records.extend(stated_integrity(&bytes));
        for limits in [Limits::default(), SMALL] {
            let full = decode(&bytes, &limits);
            assert!(full.is_err(), "{}", path.display());
            for known in &records {
                assert!(
                    fast_path(&bytes, &limits, known).is_none(),
                    "{}",
                    path.display()
                );
                assert_eq!(decode_known(&bytes, &limits, known), full);
            }
        }
    }
}

#[test]
fn hostile_files_are_refused_as_before_even_with_a_record_of_their_very_bytes() {
    // A forged index entry that holds the file's own digest (as if caf had written it): the
    // digest proves the bytes, but what the typed parse and `check` refuse is still refused.
    for path in json_files("hostile") {
        let bytes = std::fs::read(&path).unwrap();
        let digest = file_digest(&bytes);
        let shared = Arc::new(bytes.clone());
        let known =
            stated_integrity(&bytes).unwrap_or_else(|| format!("sha256:{}", "0".repeat(64)));
        for limits in [Limits::default(), SMALL] {
            let full = decode(&bytes, &limits);
            assert!(full.is_err(), "{}", path.display());
            assert!(
                fast_path_file(&bytes, &limits, &known, Some(&digest)).is_none(),
                "{}",
                path.display()
            );
            assert_eq!(
                decode_known_file(&shared, &limits, &known, Some(&digest)),
                full
            );
        }
    }
}

#[test]
fn nesting_beyond_any_limit_is_refused_as_before() {
    // 20,000 levels inside a current-version document that states a checksum.
    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    let known = format!("sha256:{}", "0".repeat(64));
    let version = CURRENT_VERSION;
    let text = format!(
        "{{\n  \"integrity\": \"{known}\",\n  \"version\": \"{version}\",\n  \"x\": {deep}\n}}\n"
    );
    for limits in [Limits::default(), SMALL] {
        assert!(fast_path(text.as_bytes(), &limits, &known).is_none());
        assert_eq!(
            decode_known(text.as_bytes(), &limits, &known),
            decode(text.as_bytes(), &limits)
        );
    }
}

/// The schema-invalid fixtures the typed model reads as a valid value: another spelling of
/// something a valid file can say (an absent optional member, a timestamp in another RFC 3339
/// form). A forged record can make these load; nothing else.
const READ_AS_VALID: &[&str] = &[
    "v1.0.0-missing-parent-id.json",
    "v1.0.0-timestamp-milliseconds-only.json",
    "v1.0.0-timestamp-with-offset.json",
];

/// A schema-invalid 1.0.0 fixture as a current-version document with a checksum that matches
/// its content, laid out as caf writes files.
fn as_current_with_checksum(path: &PathBuf) -> Vec<u8> {
    let mut doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc["version"] = json!(CURRENT_VERSION);
    if doc["$schema"] == "https://caf.dev/schemas/checkpoint-1.0.0.schema.json" {
        doc["$schema"] = json!(caf_core::format::schema::SCHEMA_URL);
    }
    doc.as_object_mut().unwrap().remove("integrity");
    let integrity = integrity_of(&doc);
    doc["integrity"] = json!(integrity);
    let mut out = serde_json::to_vec_pretty(&doc).unwrap();
    out.push(b'\n');
    out
}

#[test]
fn schema_invalid_documents_are_refused_even_when_the_record_vouches_for_them() {
    let limits = Limits::default();
    let mut read_as_valid = Vec::new();
    let mut refused = 0;
    for path in json_files("schema/invalid") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The integrity fixtures are about the checksum itself, which is rewritten here.
        if !name.starts_with("v1.0.0-") || name.contains("integrity") {
            continue;
        }
        let bytes = as_current_with_checksum(&path);
        let known = stated_integrity(&bytes).unwrap();
        let full = decode(&bytes, &limits);
        assert!(full.is_err(), "{name}: the full path refuses it");
        // A record of the file's very bytes (its digest) vouches for no more than its checksum.
        let digest = file_digest(&bytes);
        assert_eq!(
            fast_path_file(&bytes, &limits, &known, Some(&digest)),
            fast_path(&bytes, &limits, &known),
            "{name}"
        );
        match fast_path(&bytes, &limits, &known) {
            None => {
                assert_eq!(decode_known(&bytes, &limits, &known), full, "{name}");
                let shared = Arc::new(bytes.clone());
                assert_eq!(
                    decode_known_file(&shared, &limits, &known, Some(&digest)),
                    full,
                    "{name}"
                );
                refused += 1;
            }
            Some(d) => {
                // What loads is a checkpoint caf could have written: it encodes to a file that
                // the full path reads back equal.
                let again = encode(&d.checkpoint).unwrap();
                assert_eq!(decode(&again, &limits).unwrap().checkpoint, d.checkpoint);
                read_as_valid.push(name);
            }
        }
    }
    assert_eq!(read_as_valid, READ_AS_VALID);
    assert!(refused >= 35, "refused on the fast path: {refused}");
}

/// Lays `doc` (without `integrity`) out as caf writes files, lets `edit` change the text, then
/// states the checksum of the edited text: a file and a record that agree.
fn forged(doc: &Value, edit: impl Fn(String) -> String) -> (Vec<u8>, String) {
    let mut text = serde_json::to_string_pretty(doc).unwrap();
    text.push('\n');
    let text = edit(text);
    let record = caf_core::format::integrity::digest(&[text.as_bytes()]);
    let bytes = caf_core::format::integrity::splice(text.into_bytes(), &record).unwrap();
    (bytes, record)
}

/// Every place of the document that holds the agent's free-form data: objects (their own keys
/// and the keys of values inside them) and values.
const FREE_FORM_OBJECTS: &[&str] = &[
    "/extensions",
    "/metadata/extensions",
    "/snapshot/context/variables",
    "/snapshot/context/state",
    "/snapshot/tool_state/results",
    "/snapshot/thought_chain/thoughts/0/metadata",
    "/snapshot/thought_chain/thoughts/0/extensions",
    "/snapshot/tool_state/calls/0/extensions",
    "/snapshot/progress/plan/0/parameters",
];
const FREE_FORM_VALUES: &[&str] = &[
    "/snapshot/context/history/0",
    "/snapshot/context/messages/0",
    "/snapshot/context/memory/0",
    "/snapshot/thought_chain/thoughts/0/alternatives/0",
    "/snapshot/tool_state/calls/0/args",
    "/snapshot/tool_state/calls/0/result",
    "/snapshot/progress/completed_steps/0/result",
    "/snapshot/progress/plan/0/result",
];

#[test]
fn a_duplicate_key_is_refused_even_when_the_record_vouches_for_it() {
    let limits = Limits::default();
    let c = caf_tests::gen::full_checkpoint("ckpt_dup", "exec_dup");
    let mut base: Value = serde_json::from_slice(&encode(&c).unwrap()).unwrap();
    base.as_object_mut().unwrap().remove("integrity");
    // The document itself, before any duplicate: it takes the fast path.
    let (bytes, record) = forged(&base, |t| t);
    assert!(fast_path(&bytes, &limits, &record).is_some());

    let marker = "\"dup_marker\": 1";
    let twice = |t: String| {
        assert_eq!(t.matches(marker).count(), 1);
        t.replace(marker, &format!("{marker}, \"dup_marker\": 2"))
    };
    let mut cases = Vec::new();
    for pointer in FREE_FORM_OBJECTS {
        let mut own = base.clone();
        let object = own.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
        object.insert("dup_marker".into(), json!(1));
        cases.push((format!("{pointer} (its own key)"), own));
        let mut inside = base.clone();
        let object = inside
            .pointer_mut(pointer)
            .unwrap()
            .as_object_mut()
            .unwrap();
        object.insert("held".into(), json!([{"dup_marker": 1}]));
        cases.push((format!("{pointer} (a value in it)"), inside));
    }
    for pointer in FREE_FORM_VALUES {
        let mut doc = base.clone();
        *doc.pointer_mut(pointer).unwrap() = json!({"a": {"dup_marker": 1}});
        cases.push((pointer.to_string(), doc));
    }
    for (what, doc) in cases {
        let (bytes, record) = forged(&doc, twice);
        assert!(fast_path(&bytes, &limits, &record).is_none(), "{what}");
        let full = decode(&bytes, &limits);
        assert!(
            matches!(full, Err(caf_core::LoadError::DuplicateKey { .. })),
            "{what}: {full:?}"
        );
        assert_eq!(decode_known(&bytes, &limits, &record), full, "{what}");
    }
    // A field of the format itself, at the top level and deep inside.
    for (what, anchor) in [
        ("top level", "\n  \"agent_id\": "),
        ("a thought", "\n          \"content\": "),
        ("a plan step", "\n          \"attempts\": "),
    ] {
        let (bytes, record) = forged(&base, |t| {
            let at = t.find(anchor).unwrap() + 1;
            let line_end = at + t[at..].find('\n').unwrap() + 1;
            let line = t[at..line_end].to_string();
            let line = if line.ends_with(",\n") {
                line
            } else {
                line.replace('\n', ",\n")
            };
            format!("{}{line}{}", &t[..at], &t[at..])
        });
        assert!(fast_path(&bytes, &limits, &record).is_none(), "{what}");
        let full = decode(&bytes, &limits);
        assert!(
            matches!(full, Err(caf_core::LoadError::DuplicateKey { .. })),
            "{what}: {full:?}"
        );
        assert_eq!(decode_known(&bytes, &limits, &record), full, "{what}");
    }
}

#[test]
fn what_a_forged_record_can_pass_is_a_valid_value_spelled_otherwise() {
    let limits = Limits::default();
    let c = caf_tests::gen::full_checkpoint("ckpt_spelled", "exec_spelled");
    let mut base: Value = serde_json::from_slice(&encode(&c).unwrap()).unwrap();
    base.as_object_mut().unwrap().remove("integrity");
    let reason = base["metadata"]["branch"]["reason"].clone();
    type Spell = fn(&mut Value, &Value);
    let spellings: [(&str, Spell); 4] = [
        ("an optional member as null", |d, _| {
            d["snapshot"]["progress"]["task"] = Value::Null;
        }),
        ("parent_id left out", |d, _| {
            d.as_object_mut().unwrap().remove("parent_id");
        }),
        ("a timestamp with an offset", |d, _| {
            d["timestamp"] = json!("2026-01-01T01:00:01.234+01:00");
        }),
        ("an object as the array of its members", |d, reason| {
            d["metadata"]["branch"] = json!([reason]);
        }),
    ];
    for (what, spell) in spellings {
        let mut doc = base.clone();
        spell(&mut doc, &reason);
        let (bytes, record) = forged(&doc, |t| t);
        assert!(
            matches!(
                decode(&bytes, &limits),
                Err(caf_core::LoadError::Schema { .. })
            ),
            "{what}: the schema refuses it"
        );
        let read = fast_path(&bytes, &limits, &record).expect(what).checkpoint;
        // The value is one a valid file holds: written back, it reads the same.
        let again = encode(&read).unwrap();
        assert_eq!(decode(&again, &limits).unwrap().checkpoint, read, "{what}");
    }
}

/// A document nested deeper than caf ever writes (65 to 70 levels: `encode` refuses more than
/// 64), with a checksum that matches it, read with a limit above that: the fast path refuses it
/// as `decode` does, which never reads past 64 levels whatever the limit asked for.
#[test]
fn nesting_past_what_caf_writes_is_refused_under_a_larger_limit() {
    let golden = std::fs::read(fixtures().join("v1.1.0/full.json")).unwrap();
    let mut doc: Value = serde_json::from_slice(&golden).unwrap();
    doc.as_object_mut().unwrap().remove("integrity");
    let limits = Limits {
        max_depth: 100,
        ..Limits::default()
    };
    for depth in 65..=70 {
        // The root object, snapshot, context, variables, then arrays down to `depth` levels.
        let mut v = json!([]);
        for _ in 0..depth - 5 {
            v = json!([v]);
        }
        let mut deep = doc.clone();
        deep["snapshot"]["context"]["variables"]["deep"] = v;
        let (bytes, record) = forged(&deep, |t| t);
        let full = decode(&bytes, &limits);
        assert!(full.is_err(), "depth {depth}");
        assert!(
            fast_path(&bytes, &limits, &record).is_none(),
            "depth {depth}"
        );
        assert_eq!(decode_known(&bytes, &limits, &record), full);
    }
}
