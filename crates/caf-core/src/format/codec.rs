//! Encoding (typed → bytes) and decoding (bytes → typed) of checkpoint documents.
//!
//! Encoding is deterministic: keys sorted, two-space indent, a trailing newline, and an
//! `integrity` member holding `sha256:` + the hex SHA-256 of the canonical content (the document
//! without `integrity`, keys sorted, no whitespace). Decoding goes parse (strict) → detect version
//! → validate against that version's schema → verify integrity → migrate to the current version
//! → typed value.

use super::error::{EncodeError, LoadError};
use super::json::parse_strict;
use super::model::{is_snake_word, Checkpoint};
use super::{migrate, schema, CURRENT_VERSION};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Write;

/// Guard rails applied before a document is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest document accepted, in bytes (default 64 MiB).
    pub max_bytes: u64,
    /// The deepest nesting accepted (default 64; capped at 120).
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 64 * 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// The deepest nesting caf can read (serde_json's own recursion limit is 128).
pub const MAX_DEPTH_CAP: usize = 120;

/// A decoded checkpoint and the format version its document was written in.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The checkpoint, in the current format.
    pub checkpoint: Checkpoint,
    /// The version of the document as read (e.g. `0.0.1` before migration).
    pub source_version: String,
}

impl Decoded {
    /// Whether the document was migrated from an older version.
    pub fn was_migrated(&self) -> bool {
        self.source_version != CURRENT_VERSION
    }
}

struct HashWriter(Sha256);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The integrity string of a document value (its `integrity` member, if any, is ignored).
pub fn integrity_of(doc: &Value) -> String {
    let mut h = HashWriter(Sha256::new());
    match doc {
        Value::Object(map) if map.contains_key("integrity") => {
            let mut m = map.clone();
            m.remove("integrity");
            write_compact(&mut h, &Value::Object(m));
        }
        other => write_compact(&mut h, other),
    }
    let digest = h.0.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest.iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_compact(w: &mut HashWriter, v: &Value) {
    // Writing into a hasher cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(w, v);
}

/// Checks what the type system cannot: values the schema would refuse.
pub fn check(ckpt: &Checkpoint) -> Result<(), EncodeError> {
    let bad = |pointer: String, message: &str| {
        Err(EncodeError::Invalid {
            pointer,
            message: message.to_string(),
        })
    };
    if ckpt.version != CURRENT_VERSION {
        return bad(
            "/version".into(),
            "only the current format version can be written",
        );
    }
    if ckpt.agent_id.is_empty() || ckpt.agent_id.len() > 256 {
        return bad("/agent_id".into(), "agent id must be 1 to 256 characters");
    }
    let years_ok =
        |t: &crate::Timestamp| (0..=9999).contains(&chrono::Datelike::year(&t.as_datetime()));
    if !years_ok(&ckpt.timestamp) {
        return bad("/timestamp".into(), "year outside 0000-9999");
    }
    let md = &ckpt.metadata;
    if md.name.as_ref().is_some_and(|n| n.chars().count() > 256) {
        return bad("/metadata/name".into(), "name longer than 256 characters");
    }
    for (i, l) in md.labels.iter().enumerate() {
        if l.is_empty() || l.chars().count() > 128 || md.labels[..i].contains(l) {
            return bad(
                format!("/metadata/labels/{i}"),
                "labels must be unique, 1 to 128 characters",
            );
        }
    }
    for (i, t) in ckpt.snapshot.thought_chain.thoughts.iter().enumerate() {
        let p = |f: &str| format!("/snapshot/thought_chain/thoughts/{i}/{f}");
        if !is_snake_word(&t.kind) {
            return bad(p("type"), "thought type must be a snake_case word");
        }
        if t.id.is_empty() || t.id.len() > 256 {
            return bad(p("id"), "thought id must be 1 to 256 bytes");
        }
        if t.confidence.is_some_and(|c| !(0.0..=1.0).contains(&c)) {
            return bad(p("confidence"), "confidence must be a number from 0 to 1");
        }
        if !years_ok(&t.created_at) {
            return bad(p("created_at"), "year outside 0000-9999");
        }
    }
    for (i, c) in ckpt.snapshot.tool_state.calls.iter().enumerate() {
        let p = |f: &str| format!("/snapshot/tool_state/calls/{i}/{f}");
        if c.id.is_empty() || c.id.len() > 256 {
            return bad(p("id"), "tool call id must be 1 to 256 bytes");
        }
        if c.tool_id.is_empty() || c.tool_id.chars().count() > 256 {
            return bad(p("tool_id"), "tool id must be 1 to 256 characters");
        }
    }
    Ok(())
}

/// Encodes a checkpoint as its file bytes (deterministic, with integrity).
pub fn encode(ckpt: &Checkpoint) -> Result<Vec<u8>, EncodeError> {
    check(ckpt)?;
    let mut doc = serde_json::to_value(ckpt).map_err(|e| EncodeError::Invalid {
        pointer: String::new(),
        message: e.to_string(),
    })?;
    let integrity = integrity_of(&doc);
    if let Value::Object(m) = &mut doc {
        m.insert("integrity".into(), Value::String(integrity));
    }
    let mut out = Vec::with_capacity(4096);
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b"  "),
    );
    serde::Serialize::serialize(&doc, &mut ser).map_err(|e| EncodeError::Invalid {
        pointer: String::new(),
        message: e.to_string(),
    })?;
    out.push(b'\n');
    Ok(out)
}

/// Decodes file bytes into a checkpoint of the current format (see the module docs).
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded, LoadError> {
    let doc = parse(bytes, limits)?;
    decode_value(doc)
}

/// Parses bytes into a JSON value under the limits, without looking at its content.
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Value, LoadError> {
    let size = bytes.len() as u64;
    if size > limits.max_bytes {
        return Err(LoadError::TooLarge {
            size,
            max: limits.max_bytes,
        });
    }
    Ok(parse_strict(bytes, limits.max_depth.min(MAX_DEPTH_CAP))?)
}

/// The `version` member of a document.
pub fn version_of(doc: &Value) -> Result<semver::Version, LoadError> {
    let found = doc
        .get("version")
        .and_then(Value::as_str)
        .ok_or(LoadError::MissingVersion)?;
    semver::Version::parse(found).map_err(|_| LoadError::MalformedVersion {
        found: found.chars().take(64).collect(),
    })
}

/// Decodes an already parsed document (see [`decode`]).
pub fn decode_value(mut doc: Value) -> Result<Decoded, LoadError> {
    let version = version_of(&doc)?;
    let source_version = version.to_string();
    let current = migrate::current();
    if version.major > current.major || (version > current && current.major == 0) {
        return Err(LoadError::NewerVersion {
            found: source_version,
            newest: current.to_string(),
        });
    }
    let violations =
        schema::validate(&source_version, &doc).ok_or_else(|| LoadError::UnknownVersion {
            found: source_version.clone(),
            known: migrate::known_versions().join(", "),
        })?;
    if !violations.is_empty() {
        return Err(LoadError::Schema {
            version: source_version,
            violations,
        });
    }
    if version >= semver::Version::new(1, 0, 0) {
        let stored = doc
            .get("integrity")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let actual = integrity_of(&doc);
        if stored != actual {
            return Err(LoadError::Corrupted {
                expected: stored,
                actual,
            });
        }
    }
    if let Value::Object(m) = &mut doc {
        m.remove("integrity");
    }
    let doc = migrate::to_current(&version, doc)?;
    let checkpoint: Checkpoint = serde_json::from_value(doc).map_err(|e| LoadError::Invalid {
        pointer: String::new(),
        message: e.to_string(),
    })?;
    check(&checkpoint).map_err(
        |EncodeError::Invalid { pointer, message }| LoadError::Invalid { pointer, message },
    )?;
    Ok(Decoded {
        checkpoint,
        source_version,
    })
}
