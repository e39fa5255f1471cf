//! Hostile files, at the library level: every file in `tests/fixtures/hostile/` is refused by
//! [`caf_core::format::decode`] with the expected [`LoadError`] variant and a message that says
//! where; decoding never panics; importing one into a [`FileStore`] fails and changes nothing in
//! the store's directory. Files too big to commit (an oversized file, 20,000 levels of nesting)
//! are generated here, into temporary directories.
//!
//! The corpus is made by the recipes in [`cases::HOSTILE_CASES`]: `write_hostile_corpus`
//! (ignored) writes missing files and the README when run with `CAF_WRITE_FIXTURES=1`, and a test
//! checks that the committed files are what the recipes make.
//!
//! The command-line version of these checks can reuse the table in [`cases`] (file name, expected
//! variant, what the message must mention), or parse the table in the corpus's README.md, which
//! has the same rows.

#![allow(clippy::unwrap_used)]

use caf_core::format::{decode, Limits, LoadError};
use caf_core::store::FileStoreOptions;
use caf_core::{CheckpointId, CheckpointStore, CheckpointSummary, Error, FileStore, ListFilter};
use cases::{Expect, HOSTILE_CASES};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// The hostile corpus: what each file is and how caf must refuse it.
pub mod cases {
    use caf_core::format::{integrity_of, LoadError};
    use serde_json::{json, Value};
    use std::path::{Path, PathBuf};

    /// The [`LoadError`] variant a hostile file must produce.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Expect {
        /// [`LoadError::TooLarge`].
        TooLarge,
        /// [`LoadError::Syntax`].
        Syntax,
        /// [`LoadError::DuplicateKey`].
        DuplicateKey,
        /// [`LoadError::TooDeep`].
        TooDeep,
        /// [`LoadError::MissingVersion`].
        MissingVersion,
        /// [`LoadError::MalformedVersion`].
        MalformedVersion,
        /// [`LoadError::NewerVersion`].
        NewerVersion,
        /// [`LoadError::UnknownVersion`].
        UnknownVersion,
        /// [`LoadError::Schema`].
        Schema,
        /// [`LoadError::Corrupted`].
        Corrupted,
        /// [`LoadError::Invalid`].
        Invalid,
    }

    impl Expect {
        /// The variant of `e`.
        pub fn of(e: &LoadError) -> Option<Self> {
            Some(match e {
                LoadError::TooLarge { .. } => Self::TooLarge,
                LoadError::Syntax { .. } => Self::Syntax,
                LoadError::DuplicateKey { .. } => Self::DuplicateKey,
                LoadError::TooDeep { .. } => Self::TooDeep,
                LoadError::MissingVersion => Self::MissingVersion,
                LoadError::MalformedVersion { .. } => Self::MalformedVersion,
                LoadError::NewerVersion { .. } => Self::NewerVersion,
                LoadError::UnknownVersion { .. } => Self::UnknownVersion,
                LoadError::Schema { .. } => Self::Schema,
                LoadError::Corrupted { .. } => Self::Corrupted,
                LoadError::Invalid { .. } => Self::Invalid,
                _ => return None,
            })
        }
    }

    /// One hostile file.
    #[derive(Debug, Clone, Copy)]
    pub struct HostileCase {
        /// The file name in `tests/fixtures/hostile/`.
        pub file: &'static str,
        /// How decoding must fail.
        pub expect: Expect,
        /// What the error message must contain: a JSON Pointer, a position, or the versions.
        pub mentions: &'static str,
        /// What the file is.
        pub what: &'static str,
        /// How the file is made.
        pub make: fn() -> Vec<u8>,
    }

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
    }

    fn read(rel: &str) -> Vec<u8> {
        let path = fixtures().join(rel);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn minimal() -> Vec<u8> {
        read("v1.0.0/minimal.json")
    }

    fn full() -> Vec<u8> {
        read("v1.0.0/full.json")
    }

    fn doc(rel: &str) -> Value {
        serde_json::from_slice(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    fn pretty(doc: &Value) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(doc).unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// A 1.0.0 document with a checksum that matches its (changed) content.
    fn resealed(mut doc: Value) -> Vec<u8> {
        let i = integrity_of(&doc);
        doc["integrity"] = json!(i);
        pretty(&doc)
    }

    fn edited(rel: &str, edit: fn(&mut Value)) -> Value {
        let mut d = doc(rel);
        edit(&mut d);
        d
    }

    /// `bytes` with the first `from` replaced by `to` (which must be there).
    fn replace(bytes: &[u8], from: &str, to: &[u8]) -> Vec<u8> {
        let from = from.as_bytes();
        let at = bytes
            .windows(from.len())
            .position(|w| w == from)
            .unwrap_or_else(|| panic!("{:?} not found", String::from_utf8_lossy(from)));
        [&bytes[..at], to, &bytes[at + from.len()..]].concat()
    }

    /// A text edit of a 1.0.0 file whose checksum is then recomputed over what a reader parses.
    fn replace_resealed(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        let text = replace(bytes, from, to.as_bytes());
        let parsed: Value = serde_json::from_slice(&text).unwrap_or_default();
        let old = parsed["integrity"].as_str().unwrap_or_default().to_string();
        replace(&text, &old, integrity_of(&parsed).as_bytes())
    }

    fn remove(d: &mut Value, key: &str) {
        let removed = d.as_object_mut().and_then(|m| m.remove(key));
        assert!(removed.is_some(), "no {key}");
    }

    fn with_version(v: Value) -> Vec<u8> {
        let mut d = doc("v1.0.0/minimal.json");
        d["version"] = v;
        pretty(&d)
    }

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    /// Every hostile file, in the order of the README.
    #[rustfmt::skip]
    pub const HOSTILE_CASES: &[HostileCase] = &[
        // ---- not JSON at all ----
        HostileCase { file: "empty.json", expect: Expect::Syntax, mentions: "line 1 column 0", what: "an empty file", make: Vec::new },
        HostileCase { file: "whitespace-only.json", expect: Expect::Syntax, mentions: "line 3", what: "spaces and newlines only", make: || b"  \n\t\n   ".to_vec() },
        HostileCase { file: "plain-text.json", expect: Expect::Syntax, mentions: "line 1 column 1", what: "a sentence, not JSON", make: || b"This is not a checkpoint.\n".to_vec() },
        HostileCase { file: "truncated-in-the-middle.json", expect: Expect::Syntax, mentions: "near /metadata", what: "the first third of a valid 1.0.0 file", make: || { let m = minimal(); m[..m.len() / 3].to_vec() } },
        HostileCase { file: "truncated-last-brace.json", expect: Expect::Syntax, mentions: "EOF", what: "a valid 1.0.0 file without its final `}`", make: || { let m = minimal(); m[..m.len() - 2].to_vec() } },
        HostileCase { file: "raw-nul-byte-in-string.json", expect: Expect::Syntax, mentions: "near /agent_id", what: "a raw NUL byte inside the agent id string", make: || replace(&minimal(), "golden-agent", b"golden\0agent") },
        HostileCase { file: "raw-nul-bytes-after-document.json", expect: Expect::Syntax, mentions: "trailing characters", what: "a valid 1.0.0 file followed by NUL bytes", make: || [minimal(), vec![0; 16]].concat() },
        HostileCase { file: "nul-bytes-only.json", expect: Expect::Syntax, mentions: "line 1 column 1", what: "64 NUL bytes", make: || vec![0; 64] },
        HostileCase { file: "invalid-utf8-in-string.json", expect: Expect::Syntax, mentions: "near /agent_id", what: "bytes 0xFF 0xFE inside the agent id", make: || replace(&minimal(), "golden-agent", b"golden-\xff\xfeagent") },
        HostileCase { file: "invalid-utf8-overlong-slash.json", expect: Expect::Syntax, mentions: "near /id", what: "an overlong UTF-8 encoding of `/` (0xC0 0xAF) inside the id", make: || replace(&minimal(), "ckpt_golden_minimal", b"ckpt\xc0\xafminimal") },
        HostileCase { file: "lone-surrogate-escape.json", expect: Expect::Syntax, mentions: "near /agent_id", what: "a lone UTF-16 surrogate escape `\\ud800` in the agent id", make: || replace(&minimal(), "golden-agent", b"golden\\ud800agent") },
        HostileCase { file: "raw-control-character-in-string.json", expect: Expect::Syntax, mentions: "near /agent_id", what: "a raw tab inside a string (JSON requires `\\t`)", make: || replace(&minimal(), "golden-agent", b"golden\tagent") },
        HostileCase { file: "utf16le-with-bom.json", expect: Expect::Syntax, mentions: "line 1 column 1", what: "a valid 1.0.0 file encoded as UTF-16LE with a byte order mark", make: || { let m = String::from_utf8(minimal()).unwrap_or_default(); [vec![0xff, 0xfe], m.encode_utf16().flat_map(u16::to_le_bytes).collect()].concat() } },
        HostileCase { file: "utf8-bom-prefixed.json", expect: Expect::Syntax, mentions: "line 1 column 1", what: "a valid 1.0.0 file preceded by a UTF-8 byte order mark (refused: RFC 8259 forbids writing one, and serde_json refuses it)", make: || [b"\xef\xbb\xbf".to_vec(), minimal()].concat() },
        HostileCase { file: "trailing-garbage.json", expect: Expect::Syntax, mentions: "trailing characters", what: "a valid 1.0.0 file followed by text", make: || [minimal(), b"garbage\n".to_vec()].concat() },
        HostileCase { file: "two-documents-concatenated.json", expect: Expect::Syntax, mentions: "trailing characters", what: "a valid 1.0.0 file twice in a row", make: || [minimal(), minimal()].concat() },
        HostileCase { file: "single-quoted-strings.json", expect: Expect::Syntax, mentions: "line 1 column 2", what: "JavaScript-style single quotes", make: || b"{'version': '1.0.0', 'id': 'ckpt_x'}\n".to_vec() },
        HostileCase { file: "comment.json", expect: Expect::Syntax, mentions: "line 2", what: "a valid 1.0.0 file with a `//` comment", make: || replace(&minimal(), "{\n", b"{\n  // a comment\n") },
        HostileCase { file: "trailing-comma.json", expect: Expect::Syntax, mentions: "trailing comma", what: "a trailing comma before the final `}`", make: || replace(&minimal(), "\"version\": \"1.0.0\"\n", b"\"version\": \"1.0.0\",\n") },
        HostileCase { file: "nan-literal.json", expect: Expect::Syntax, mentions: "near /snapshot/thought_chain/thoughts/0/confidence", what: "`NaN` as a confidence", make: || replace(&full(), "\"confidence\": 0.92", b"\"confidence\": NaN") },
        HostileCase { file: "infinity-literal.json", expect: Expect::Syntax, mentions: "near /metadata/tokens_used", what: "`Infinity` as a counter", make: || replace(&minimal(), "\"tokens_used\": 0", b"\"tokens_used\": Infinity") },
        HostileCase { file: "number-overflow-1e400.json", expect: Expect::Syntax, mentions: "number out of range", what: "a number beyond f64 (1e400)", make: || replace(&minimal(), "\"tokens_used\": 0", b"\"tokens_used\": 1e400") },
        // ---- JSON, but not acceptable JSON ----
        HostileCase { file: "duplicate-key-top-level.json", expect: Expect::DuplicateKey, mentions: "at /: duplicate key \"id\"", what: "`id` twice at the top level (readers disagree on which one wins)", make: || replace(&minimal(), "\"agent_id\"", b"\"id\": \"ckpt_evil\",\n  \"agent_id\"") },
        HostileCase { file: "duplicate-key-nested.json", expect: Expect::DuplicateKey, mentions: "at /metadata: duplicate key \"checkpoint_reason\"", what: "`checkpoint_reason` twice in metadata", make: || replace(&minimal(), "\"checkpoint_reason\": \"manual\",", b"\"checkpoint_reason\": \"manual\",\n    \"checkpoint_reason\": \"error\",") },
        HostileCase { file: "duplicate-key-in-agent-data.json", expect: Expect::DuplicateKey, mentions: "at /snapshot/context/variables: duplicate key \"attempt\"", what: "a variable twice (free-form data is no exception)", make: || replace(&full(), "\"attempt\": 2,", b"\"attempt\": 2,\n        \"attempt\": 3,") },
        HostileCase { file: "deep-nesting-200-levels.json", expect: Expect::TooDeep, mentions: "at /snapshot/context/variables/deep/0/0/0", what: "200 nested arrays in a variable (the default limit is 64 levels)", make: || replace(&minimal(), "\"variables\": {}", format!("\"variables\": {{\"deep\": {}}}", nested(200)).as_bytes()) },
        // ---- not a checkpoint, or not one of a version caf knows ----
        HostileCase { file: "top-level-array.json", expect: Expect::MissingVersion, mentions: "/version", what: "a valid checkpoint wrapped in an array", make: || [b"[".to_vec(), minimal(), b"]\n".to_vec()].concat() },
        HostileCase { file: "top-level-string.json", expect: Expect::MissingVersion, mentions: "/version", what: "a JSON string", make: || b"\"1.0.0\"\n".to_vec() },
        HostileCase { file: "top-level-number.json", expect: Expect::MissingVersion, mentions: "/version", what: "a JSON number", make: || b"42\n".to_vec() },
        HostileCase { file: "top-level-null.json", expect: Expect::MissingVersion, mentions: "/version", what: "JSON null", make: || b"null\n".to_vec() },
        HostileCase { file: "empty-object.json", expect: Expect::MissingVersion, mentions: "/version", what: "`{}`", make: || b"{}\n".to_vec() },
        HostileCase { file: "version-missing.json", expect: Expect::MissingVersion, mentions: "/version", what: "a 1.0.0 file without `version`", make: || pretty(&edited("v1.0.0/minimal.json", |d| remove(d, "version"))) },
        HostileCase { file: "version-as-number.json", expect: Expect::MissingVersion, mentions: "/version", what: "`\"version\": 1.0`", make: || with_version(json!(1.0)) },
        HostileCase { file: "version-null.json", expect: Expect::MissingVersion, mentions: "/version", what: "`\"version\": null`", make: || with_version(Value::Null) },
        HostileCase { file: "version-banana.json", expect: Expect::MalformedVersion, mentions: "\"banana\"", what: "`\"version\": \"banana\"`", make: || with_version(json!("banana")) },
        HostileCase { file: "version-v-prefix.json", expect: Expect::MalformedVersion, mentions: "\"v1.0.0\"", what: "`\"version\": \"v1.0.0\"`", make: || with_version(json!("v1.0.0")) },
        HostileCase { file: "version-empty.json", expect: Expect::MalformedVersion, mentions: "/version", what: "`\"version\": \"\"`", make: || with_version(json!("")) },
        HostileCase { file: "version-9.9.9-newer-major.json", expect: Expect::NewerVersion, mentions: "9.9.9 is newer than the newest this caf supports (1.1.0)", what: "a newer major version: refused, naming both versions", make: || with_version(json!("9.9.9")) },
        HostileCase { file: "version-2.0.0-next-major.json", expect: Expect::NewerVersion, mentions: "2.0.0", what: "the next major version", make: || with_version(json!("2.0.0")) },
        HostileCase { file: "version-1.7.0-newer-minor.json", expect: Expect::NewerVersion, mentions: "format version 1.7.0 is newer than the newest this caf supports (1.1.0)", what: "a newer minor version of the current major: refused like a newer major (caf would drop what it does not understand)", make: || with_version(json!("1.7.0")) },
        HostileCase { file: "version-1.0.1-unknown-patch.json", expect: Expect::UnknownVersion, mentions: "unknown format version 1.0.1", what: "a patch version that never existed (between 1.0.0 and 1.1.0): refused as unknown", make: || with_version(json!("1.0.1")) },
        HostileCase { file: "version-0.5.0-unknown-older.json", expect: Expect::UnknownVersion, mentions: "0.5.0", what: "an older version that never existed", make: || with_version(json!("0.5.0")) },
        HostileCase { file: "version-1.0.0-prerelease.json", expect: Expect::UnknownVersion, mentions: "1.0.0-rc.1", what: "a pre-release of 1.0.0", make: || with_version(json!("1.0.0-rc.1")) },
        // ---- integrity ----
        HostileCase { file: "checksum-mismatch-one-char-changed.json", expect: Expect::Corrupted, mentions: "at /integrity", what: "a valid 1.0.0 file with one character of its content changed (`golden-agent` -> `golden-agenT`)", make: || replace(&minimal(), "golden-agent", b"golden-agenT") },
        HostileCase { file: "checksum-mismatch-thought-edited.json", expect: Expect::Corrupted, mentions: "at /integrity", what: "the full golden file with one word of a thought changed", make: || replace(&full(), "Patch the parser.", b"Patch the lexer.") },
        HostileCase { file: "checksum-of-another-file.json", expect: Expect::Corrupted, mentions: "at /integrity", what: "a valid 1.0.0 file carrying the checksum of another file", make: || { let other = doc("v1.0.0/full.json")["integrity"].as_str().unwrap_or_default().to_string(); let mut d = doc("v1.0.0/minimal.json"); d["integrity"] = json!(other); pretty(&d) } },
        HostileCase { file: "checksum-missing.json", expect: Expect::Schema, mentions: "integrity", what: "a valid 1.0.0 file without `integrity` (required)", make: || pretty(&edited("v1.0.0/minimal.json", |d| remove(d, "integrity"))) },
        HostileCase { file: "checksum-malformed.json", expect: Expect::Schema, mentions: "at /integrity", what: "`integrity` that is not `sha256:` and 64 hex digits", make: || pretty(&edited("v1.0.0/minimal.json", |d| d["integrity"] = json!("sha256:xyz"))) },
        // ---- ids that would escape the store ----
        HostileCase { file: "id-path-traversal.json", expect: Expect::Schema, mentions: "at /id", what: "a 1.0.0 file (with a matching checksum) whose id is `../../etc/passwd`", make: || resealed(edited("v1.0.0/minimal.json", |d| d["id"] = json!("../../etc/passwd"))) },
        HostileCase { file: "id-path-traversal-v0.0.1.json", expect: Expect::Invalid, mentions: "at /id", what: "a 0.0.1 file (whose schema allows any id) with id `../../etc/passwd`", make: || pretty(&edited("v0.0.1/seed-example.json", |d| d["id"] = json!("../../etc/passwd"))) },
        HostileCase { file: "id-windows-path-v0.0.1.json", expect: Expect::Invalid, mentions: "at /id", what: "a 0.0.1 file with id `..\\..\\windows\\system32`", make: || pretty(&edited("v0.0.1/seed-example.json", |d| d["id"] = json!("..\\..\\windows\\system32"))) },
        HostileCase { file: "id-with-nul.json", expect: Expect::Schema, mentions: "at /id", what: "a 1.0.0 file whose id holds an (escaped) NUL", make: || resealed(edited("v1.0.0/minimal.json", |d| d["id"] = json!("ckpt\u{0}.json"))) },
        HostileCase { file: "id-with-nul-v0.0.1.json", expect: Expect::Invalid, mentions: "at /id", what: "a 0.0.1 file whose id holds an (escaped) NUL", make: || pretty(&edited("v0.0.1/ts-caf-minimal.json", |d| d["id"] = json!("ckpt\u{0}.json"))) },
        HostileCase { file: "execution-id-with-slash.json", expect: Expect::Schema, mentions: "at /execution_id", what: "a 1.0.0 file whose execution id is `exec/../../x`", make: || resealed(edited("v1.0.0/minimal.json", |d| d["execution_id"] = json!("exec/../../x"))) },
        HostileCase { file: "execution-id-with-slash-v0.0.1.json", expect: Expect::Invalid, mentions: "at /execution_id", what: "a 0.0.1 file whose execution id is `runs/1`", make: || pretty(&edited("v0.0.1/seed-example.json", |d| d["execution_id"] = json!("runs/1"))) },
        HostileCase { file: "parent-id-absolute-path-v0.0.1.json", expect: Expect::Invalid, mentions: "at /parent/checkpoint_id", what: "a 0.0.1 file whose parent is `/etc/passwd`", make: || pretty(&edited("v0.0.1/ts-caf-minimal.json", |d| d["parent"] = json!({"checkpoint_id": "/etc/passwd"}))) },
        // ---- wrong shapes ----
        HostileCase { file: "wrong-types.json", expect: Expect::Schema, mentions: "at /metadata/step_number", what: "a string step number and a thought chain that is a string", make: || resealed(edited("v1.0.0/minimal.json", |d| { d["metadata"]["step_number"] = json!("7"); d["snapshot"]["thought_chain"] = json!("none"); })) },
        HostileCase { file: "missing-fields.json", expect: Expect::Schema, mentions: "is a required property", what: "a 1.0.0 file without `snapshot` and `metadata`", make: || resealed(edited("v1.0.0/minimal.json", |d| { remove(d, "snapshot"); remove(d, "metadata"); })) },
        HostileCase { file: "negative-counters.json", expect: Expect::Schema, mentions: "at /metadata/duration_ms", what: "negative tokens_used and duration_ms", make: || resealed(edited("v1.0.0/minimal.json", |d| { d["metadata"]["tokens_used"] = json!(-1); d["metadata"]["duration_ms"] = json!(-5); })) },
        HostileCase { file: "confidence-above-one.json", expect: Expect::Schema, mentions: "at /snapshot/thought_chain/thoughts/0/confidence", what: "a confidence of 1.5", make: || resealed(edited("v1.0.0/full.json", |d| d["snapshot"]["thought_chain"]["thoughts"][0]["confidence"] = json!(1.5))) },
        HostileCase { file: "bad-timestamp.json", expect: Expect::Schema, mentions: "at /timestamp", what: "`\"timestamp\": \"yesterday\"`", make: || resealed(edited("v1.0.0/minimal.json", |d| d["timestamp"] = json!("yesterday"))) },
        HostileCase { file: "unknown-top-level-field.json", expect: Expect::Schema, mentions: "at /", what: "a field 1.0.0 does not define (1.0.0 is closed; extensions go in `extensions`)", make: || resealed(edited("v1.0.0/minimal.json", |d| d["x_custom"] = json!({"note": "not here"}))) },
        HostileCase { file: "bad-tool-status.json", expect: Expect::Schema, mentions: "at /snapshot/tool_state/calls/0/status", what: "a tool call status `done`", make: || resealed(edited("v1.0.0/full.json", |d| d["snapshot"]["tool_state"]["calls"][0]["status"] = json!("done"))) },
        HostileCase { file: "integer-beyond-u64.json", expect: Expect::Invalid, mentions: "at /", what: "tokens_used of 2^64, an integer to JSON Schema but beyond u64 (checksum matches)", make: || replace_resealed(&minimal(), "\"tokens_used\": 0", "\"tokens_used\": 18446744073709551616") },
        HostileCase { file: "counter-as-float-1.0.json", expect: Expect::Invalid, mentions: "at /", what: "tokens_used written `1.0`: an integer to JSON Schema, refused by caf (checksum matches)", make: || replace_resealed(&minimal(), "\"tokens_used\": 0", "\"tokens_used\": 1.0") },
        HostileCase { file: "timestamp-beyond-year-9999-v0.0.1.json", expect: Expect::Invalid, mentions: "at /timestamp: year outside 0000-9999", what: "a 0.0.1 epoch-millisecond timestamp in the year 287,000", make: || pretty(&edited("v0.0.1/seed-example.json", |d| d["timestamp"] = json!(9_000_000_000_000_000_u64))) },
        HostileCase { file: "wrong-types-v0.0.1.json", expect: Expect::Schema, mentions: "at /snapshot/thought_chain/0", what: "a 0.0.1 seed file whose thoughts are strings", make: || pretty(&edited("v0.0.1/seed-example.json", |d| d["snapshot"]["thought_chain"] = json!(["a thought"]))) },
        HostileCase { file: "missing-fields-v0.0.1.json", expect: Expect::Schema, mentions: "at /snapshot", what: "a 0.0.1 TypeScript file without a tool state", make: || pretty(&edited("v0.0.1/ts-caf-minimal.json", |d| remove(&mut d["snapshot"], "tool_state"))) },
        HostileCase { file: "negative-counters-v0.0.1.json", expect: Expect::Schema, mentions: "at /metadata/tokens_used", what: "a 0.0.1 file with negative tokens_used", make: || pretty(&edited("v0.0.1/ts-caf-minimal.json", |d| d["metadata"]["tokens_used"] = json!(-100))) },
    ];
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn hostile_dir() -> PathBuf {
    fixtures().join("hostile")
}

fn read_hostile(file: &str) -> Vec<u8> {
    let path = hostile_dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The limits the tests read with: small enough that an oversized file is cheap to make.
const SMALL: Limits = Limits {
    max_bytes: 64 * 1024,
    max_depth: 64,
};

fn readme() -> String {
    let mut s = String::from(
        "# Hostile checkpoint files\n\n\
         Every file here must be refused with a clear error (naming the file and, where it applies, a\n\
         JSON Pointer or a line and column), without a panic, and without changing anything in the\n\
         store it was imported into. `tests/tests/hostile.rs` checks this at the library level; the\n\
         expected error is the `caf_core::format::LoadError` variant.\n\n\
         The files are made from the golden files by the recipes in `tests/tests/hostile.rs`\n\
         (`CAF_WRITE_FIXTURES=1 cargo test -p caf-tests --test hostile -- --ignored` writes the\n\
         missing ones and this README); a test checks that they match. Do not edit them by hand.\n\n\
         Not committed, generated by the tests into temporary directories:\n\n\
         - a valid-looking 1.0.0 file one byte over a 64 KiB `Limits::max_bytes` (`TooLarge`), next to\n  \
           one exactly at the limit, with a huge string value, that loads;\n\
         - 20,000 levels of nested arrays, of nested objects, and of both (`TooDeep`, no stack\n  \
           overflow, whatever `max_depth` is asked for);\n\
         - a symlink to a valid checkpoint outside the store, a directory, a FIFO and `/dev/zero`\n  \
           (`caf_core::Error::NotRegularFile`: caf reads only regular files).\n\n\
         | File | Expected error | The message mentions | What it is |\n\
         |---|---|---|---|\n",
    );
    for c in HOSTILE_CASES {
        s.push_str(&format!(
            "| `{}` | {:?} | `{}` | {} |\n",
            c.file,
            c.expect,
            c.mentions.replace('|', "\\|"),
            c.what.replace('|', "\\|")
        ));
    }
    s
}

/// Writes the missing hostile files and the README (never overwrites a file).
#[test]
#[ignore = "writes fixtures: CAF_WRITE_FIXTURES=1 cargo test -p caf-tests --test hostile -- --ignored"]
fn write_hostile_corpus() {
    if std::env::var_os("CAF_WRITE_FIXTURES").is_none() {
        eprintln!("set CAF_WRITE_FIXTURES=1 to write the missing hostile files");
        return;
    }
    std::fs::create_dir_all(hostile_dir()).unwrap();
    let files = HOSTILE_CASES
        .iter()
        .map(|c| (c.file.to_string(), (c.make)()))
        .chain([("README.md".to_string(), readme().into_bytes())]);
    for (name, bytes) in files {
        let path = hostile_dir().join(&name);
        if !path.exists() {
            std::fs::write(&path, bytes).unwrap();
            eprintln!("wrote {name}");
        }
    }
}

#[test]
fn committed_corpus_is_what_the_recipes_make() {
    let mut on_disk: Vec<String> = std::fs::read_dir(hostile_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = HOSTILE_CASES.iter().map(|c| c.file.to_string()).collect();
    listed.push("README.md".into());
    listed.sort();
    assert_eq!(on_disk, listed);
    assert!(HOSTILE_CASES.len() >= 30);
    for c in HOSTILE_CASES {
        assert_eq!(read_hostile(c.file), (c.make)(), "{}", c.file);
    }
    assert_eq!(
        String::from_utf8(read_hostile("README.md")).unwrap(),
        readme(),
        "README.md"
    );
}

/// Decodes without letting a panic escape: a panic is a test failure with the file's name.
fn decode_no_panic(what: &str, bytes: &[u8], limits: &Limits) -> Result<(), LoadError> {
    match catch_unwind(AssertUnwindSafe(|| decode(bytes, limits))) {
        Ok(r) => r.map(|_| ()),
        Err(_) => panic!("{what}: decoding panicked"),
    }
}

#[test]
fn every_hostile_file_is_refused_with_the_expected_error() {
    for c in HOSTILE_CASES {
        let bytes = read_hostile(c.file);
        for limits in [Limits::default(), SMALL] {
            let err = match decode_no_panic(c.file, &bytes, &limits) {
                Ok(()) => panic!("{}: decoded, but it is hostile ({})", c.file, c.what),
                Err(e) => e,
            };
            assert_eq!(Expect::of(&err), Some(c.expect), "{}: {err}", c.file);
            let msg = err.to_string();
            assert!(
                msg.contains(c.mentions),
                "{}: the message should mention {:?}: {msg}",
                c.file,
                c.mentions
            );
            assert!(!msg.contains('\n'), "{}: one line: {msg:?}", c.file);
            assert!(msg.len() < 2000, "{}: a short message: {msg}", c.file);
        }
    }
}

#[test]
fn syntax_errors_give_a_position_and_schema_errors_a_pointer() {
    for c in HOSTILE_CASES {
        let err = decode(&read_hostile(c.file), &Limits::default()).unwrap_err();
        match &err {
            LoadError::Syntax { line, column, .. } => {
                assert!(*line >= 1, "{}", c.file);
                assert!(
                    err.to_string()
                        .contains(&format!("line {line} column {column}")),
                    "{}: {err}",
                    c.file
                );
            }
            LoadError::Schema { violations, .. } => {
                assert!(!violations.is_empty(), "{}", c.file);
                let first = &violations[0];
                let shown = if first.pointer.is_empty() {
                    "at /".to_string()
                } else {
                    format!("at {}", first.pointer)
                };
                assert!(err.to_string().contains(&shown), "{}: {err}", c.file);
                for line in err.lines() {
                    assert!(line.starts_with("at /"), "{}: {line}", c.file);
                }
            }
            LoadError::DuplicateKey { .. }
            | LoadError::TooDeep { .. }
            | LoadError::Corrupted { .. }
            | LoadError::Invalid { .. }
            | LoadError::MissingVersion
            | LoadError::MalformedVersion { .. } => {
                assert!(err.to_string().starts_with("at /"), "{}: {err}", c.file)
            }
            LoadError::NewerVersion { found, newest } => {
                let msg = err.to_string();
                assert!(
                    msg.contains(found.as_str()) && msg.contains(newest.as_str()),
                    "{}: {msg}",
                    c.file
                );
            }
            _ => {}
        }
    }
}

/// Every regular file under `dir` (recursively) with its bytes, and every symlink with its target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                out.insert(rel.join(""), Vec::new());
                walk(root, &path, out);
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, target.to_string_lossy().into_owned().into_bytes());
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn json_files(snap: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<&PathBuf> {
    snap.keys()
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.parent() == Some(Path::new("")))
        .collect()
}

/// A store holding the two golden checkpoints; many hostile files reuse their ids.
/// A file store with the limits its imports are read with.
struct Importer {
    store: FileStore,
    limits: Limits,
}

impl Importer {
    fn new(store: FileStore, limits: Limits) -> Self {
        Self { store, limits }
    }

    /// Reads one file as an import does (a directory is not expanded here: reading it is
    /// refused) and saves it.
    fn import(&self, path: &Path) -> Result<CheckpointSummary, Error> {
        let decoded = caf_core::store::read_checkpoint_file(path, &self.limits)?;
        self.store.save(&decoded.checkpoint)
    }

    fn store(&self) -> &FileStore {
        &self.store
    }
}

fn seeded_store(dir: &Path) -> Importer {
    let store = FileStore::open_with(
        dir,
        FileStoreOptions {
            limits: SMALL,
            ..FileStoreOptions::default()
        },
    )
    .unwrap();
    let manager = Importer::new(store, SMALL);
    for g in ["minimal.json", "full.json"] {
        manager
            .import(&fixtures().join("v1.0.0").join(g))
            .unwrap_or_else(|e| panic!("{g}: {e}"));
    }
    manager
}

#[test]
fn importing_a_hostile_file_fails_and_changes_nothing() {
    let store_dir = tempfile::tempdir().unwrap();
    let manager = seeded_store(store_dir.path());
    let before = snapshot(store_dir.path());
    assert_eq!(json_files(&before).len(), 2, "{before:?}");
    for c in HOSTILE_CASES {
        let path = hostile_dir().join(c.file);
        let result = catch_unwind(AssertUnwindSafe(|| manager.import(&path)))
            .unwrap_or_else(|_| panic!("{}: import panicked", c.file));
        match result {
            Err(Error::Load { origin, error }) => {
                assert_eq!(Expect::of(&error), Some(c.expect), "{}: {error}", c.file);
                assert!(
                    origin.ends_with(c.file),
                    "{}: names the file: {origin}",
                    c.file
                );
                let shown = Error::Load { origin, error }.to_string();
                assert!(shown.contains(c.file), "{shown}");
            }
            other => panic!("{}: expected a load error, got {other:?}", c.file),
        }
        assert_eq!(
            snapshot(store_dir.path()),
            before,
            "{}: the store changed",
            c.file
        );
    }
    // The store still works and still holds exactly the two checkpoints.
    let ids: Vec<String> = manager
        .store()
        .list(&ListFilter::default())
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(ids, ["ckpt_golden_full", "ckpt_golden_minimal"]);
    for id in ids {
        manager
            .store()
            .load(&CheckpointId::new(id).unwrap())
            .unwrap();
    }
}

#[test]
fn a_hostile_file_inside_the_store_is_reported_not_listed() {
    let store_dir = tempfile::tempdir().unwrap();
    drop(seeded_store(store_dir.path()));
    // Hostile bytes under valid checkpoint names, as if written by someone else.
    for (i, c) in HOSTILE_CASES.iter().enumerate() {
        std::fs::write(
            store_dir.path().join(format!("ckpt_hostile_{i}.json")),
            read_hostile(c.file),
        )
        .unwrap();
    }
    let before = snapshot(store_dir.path());
    let store = FileStore::open_with(
        store_dir.path(),
        FileStoreOptions {
            limits: SMALL,
            ..FileStoreOptions::default()
        },
    )
    .unwrap();
    assert_eq!(store.problems().len(), HOSTILE_CASES.len());
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 2);
    for (i, c) in HOSTILE_CASES.iter().enumerate() {
        let id = CheckpointId::new(format!("ckpt_hostile_{i}")).unwrap();
        match store.load(&id) {
            Err(Error::Load { error, .. }) => {
                assert_eq!(Expect::of(&error), Some(c.expect), "{}: {error}", c.file)
            }
            other => panic!("{}: expected a load error, got {other:?}", c.file),
        }
    }
    // Reading changed no checkpoint file (the index under .caf/ may be rebuilt).
    let after = snapshot(store_dir.path());
    let files = |s: &BTreeMap<PathBuf, Vec<u8>>| -> BTreeMap<PathBuf, Vec<u8>> {
        s.iter()
            .filter(|(p, _)| !p.starts_with(".caf"))
            .map(|(p, b)| (p.clone(), b.clone()))
            .collect()
    };
    assert_eq!(files(&after), files(&before));
}

// ---- generated at test time ------------------------------------------------------------------

/// A valid file of the current version of exactly `size` bytes (a long string variable pads it).
fn valid_file_of_size(size: usize) -> Vec<u8> {
    let make = |n: usize| {
        let mut d: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures().join("v1.1.0/minimal.json")).unwrap())
                .unwrap();
        d["snapshot"]["context"]["variables"]["blob"] = serde_json::json!("x".repeat(n));
        let c: caf_core::Checkpoint = {
            d.as_object_mut().unwrap().remove("integrity");
            serde_json::from_value(d).unwrap()
        };
        caf_core::format::encode(&c).unwrap()
    };
    let base = make(0).len();
    assert!(size >= base);
    let bytes = make(size - base);
    assert_eq!(bytes.len(), size);
    bytes
}

#[test]
fn a_file_over_the_size_limit_is_too_large() {
    let limit = usize::try_from(SMALL.max_bytes).unwrap();
    let at_limit = valid_file_of_size(limit);
    let over = valid_file_of_size(limit + 1);
    // A huge string value is fine while the file is within the limit.
    decode(&at_limit, &SMALL).unwrap();
    match decode(&over, &SMALL) {
        Err(LoadError::TooLarge { size, max }) => {
            assert_eq!((size, max), (SMALL.max_bytes + 1, SMALL.max_bytes))
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // The same through import, and a file store reading it in place.
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("oversized.json");
    std::fs::write(&outside, &over).unwrap();
    let store_dir = tmp.path().join("store");
    let manager = seeded_store(&store_dir);
    let before = snapshot(&store_dir);
    match manager.import(&outside) {
        Err(Error::Load {
            error: LoadError::TooLarge { .. },
            origin,
        }) => assert!(origin.contains("oversized.json")),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(snapshot(&store_dir), before);
    std::fs::write(store_dir.join("ckpt_golden_minimal.json"), &over).unwrap();
    let id = CheckpointId::new("ckpt_golden_minimal").unwrap();
    assert!(matches!(
        manager.store().load(&id),
        Err(Error::Load {
            error: LoadError::TooLarge { .. },
            ..
        })
    ));
}

#[test]
fn twenty_thousand_levels_of_nesting_are_too_deep_without_overflowing_the_stack() {
    let n = 20_000;
    let docs = [
        format!("{}{}", "[".repeat(n), "]".repeat(n)),
        format!("{}{}{}", "{\"a\":".repeat(n), "1", "}".repeat(n)),
        format!("{}{}{}", "{\"a\":[".repeat(n / 2), "1", "]}".repeat(n / 2)),
        format!(
            "{{\"version\": \"1.0.0\", \"snapshot\": {}{}}}",
            "[".repeat(n),
            "]".repeat(n)
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let store_dir = tmp.path().join("store");
    drop(seeded_store(&store_dir));
    let before = snapshot(&store_dir);
    for (i, doc) in docs.iter().enumerate() {
        for max_depth in [1, 64, 120, 10_000, usize::MAX] {
            let limits = Limits {
                max_bytes: u64::MAX,
                max_depth,
            };
            match decode_no_panic("deep", doc.as_bytes(), &limits) {
                Err(LoadError::TooDeep {
                    max_depth: m,
                    pointer,
                }) => {
                    assert!(m <= caf_core::format::MAX_DEPTH_CAP, "{m}");
                    assert!(pointer.starts_with('/'), "{pointer}");
                    let err = decode(doc.as_bytes(), &limits).unwrap_err().to_string();
                    assert!(err.starts_with("at /"), "{err}");
                }
                other => panic!("document {i}, max_depth {max_depth}: {other:?}"),
            }
        }
        let path = tmp.path().join(format!("deep-{i}.json"));
        std::fs::write(&path, doc).unwrap();
        let deep_reader = Importer::new(
            FileStore::open(&store_dir).unwrap(),
            Limits {
                max_bytes: u64::MAX,
                max_depth: 64,
            },
        );
        assert!(matches!(
            deep_reader.import(&path),
            Err(Error::Load {
                error: LoadError::TooDeep { .. },
                ..
            })
        ));
        assert_eq!(snapshot(&store_dir), before);
    }
}

/// `Limits { max_bytes: u64::MAX, .. }` means no size limit, not an overflow.
#[test]
fn no_size_limit_reads_whole_files() {
    let unlimited = Limits {
        max_bytes: u64::MAX,
        max_depth: 64,
    };
    let tmp = tempfile::tempdir().unwrap();
    let manager = Importer::new(FileStore::open(tmp.path()).unwrap(), unlimited);
    let summary = manager
        .import(&fixtures().join("v1.0.0/full.json"))
        .unwrap();
    assert_eq!(summary.id.as_str(), "ckpt_golden_full");
}

/// Decoding anything never panics: every prefix of a golden file, and every single-byte change.
#[test]
fn mangled_golden_files_never_panic() {
    let minimal = std::fs::read(fixtures().join("v1.0.0/minimal.json")).unwrap();
    let legacy = std::fs::read(fixtures().join("v0.0.1/ts-caf-minimal.json")).unwrap();
    for bytes in [&minimal, &legacy] {
        assert_eq!(bytes.last(), Some(&b'\n'));
        for end in 0..bytes.len() {
            // Only the whole file (with or without its final newline) is a document.
            let r = decode_no_panic("prefix", &bytes[..end], &Limits::default());
            assert_eq!(
                r.is_ok(),
                end == bytes.len() - 1,
                "prefix of {end} bytes: {r:?}"
            );
        }
        for i in 0..bytes.len() {
            for b in [b'"', b'0', b'}', b'\\', 0, 0xff, bytes[i] ^ 0x20] {
                let mut m = bytes.clone();
                m[i] = b;
                let _ = decode_no_panic("byte change", &m, &Limits::default());
            }
        }
    }
}

/// Reformatting a file (indentation, key order) keeps its checksum valid: the checksum covers
/// the canonical content, not the bytes.
#[test]
fn reformatting_is_not_corruption() {
    let bytes = std::fs::read(fixtures().join("v1.0.0/full.json")).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let compact = serde_json::to_vec(&v).unwrap();
    let original = decode(&bytes, &Limits::default()).unwrap();
    assert_eq!(decode(&compact, &Limits::default()).unwrap(), original);
    let tabbed: String = String::from_utf8(serde_json::to_vec_pretty(&v).unwrap())
        .unwrap()
        .lines()
        .map(|l| {
            let t = l.trim_start_matches(' ');
            format!("{}{t}\r\n", "\t".repeat((l.len() - t.len()) / 2))
        })
        .collect();
    assert_ne!(tabbed.as_bytes(), &bytes[..]);
    assert_eq!(
        decode(tabbed.as_bytes(), &Limits::default()).unwrap(),
        original
    );
}

#[cfg(unix)]
#[test]
fn only_regular_files_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let store_dir = tmp.path().join("store");
    let manager = seeded_store(&store_dir);
    // A valid checkpoint outside the store, and links to it.
    let outside = tmp.path().join("outside.json");
    let outside_bytes = std::fs::read(fixtures().join("v1.0.0/from-seed-example.json")).unwrap();
    std::fs::write(&outside, &outside_bytes).unwrap();
    let link_outside_store = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&outside, &link_outside_store).unwrap();
    let link_in_store = store_dir.join("ckpt_abc123.json");
    std::os::unix::fs::symlink(&outside, &link_in_store).unwrap();
    let a_dir = tmp.path().join("dir.json");
    std::fs::create_dir(&a_dir).unwrap();
    let fifo = tmp.path().join("fifo.json");
    let have_fifo = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let before = snapshot(&store_dir);

    let mut refused = vec![link_outside_store.clone(), link_in_store.clone(), a_dir];
    if have_fifo {
        refused.push(fifo); // reading it would block forever
    }
    if Path::new("/dev/zero").exists() {
        refused.push(PathBuf::from("/dev/zero")); // reading it would never end
    }
    for path in &refused {
        match manager.import(path) {
            Err(Error::NotRegularFile { path: p, kind }) => {
                assert_eq!(&p, path);
                assert!(!kind.is_empty());
            }
            other => panic!("{}: expected NotRegularFile, got {other:?}", path.display()),
        }
        assert_eq!(snapshot(&store_dir), before, "{}", path.display());
    }
    // The store does not follow the link either: not loaded, not listed, reported.
    let id = CheckpointId::new("ckpt_abc123").unwrap();
    assert!(matches!(
        manager.store().load(&id),
        Err(Error::NotRegularFile { .. })
    ));
    let reopened = FileStore::open(&store_dir).unwrap();
    assert!(reopened
        .problems()
        .iter()
        .any(|p| p.path == link_in_store && matches!(p.error, Error::NotRegularFile { .. })));
    assert!(reopened.load(&id).is_err());
    assert!(!reopened
        .list(&ListFilter::default())
        .unwrap()
        .iter()
        .any(|s| s.id == id));
    // Saving that id replaces the link; the file it pointed to is untouched.
    let c = decode(&outside_bytes, &Limits::default())
        .unwrap()
        .checkpoint;
    reopened.save(&c).unwrap();
    assert!(!std::fs::symlink_metadata(&link_in_store)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&outside).unwrap(), outside_bytes);
    assert_eq!(reopened.load(&id).unwrap(), c);
}
