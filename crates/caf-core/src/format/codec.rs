//! Encoding (typed → bytes) and decoding (bytes → typed) of checkpoint documents.
//!
//! Encoding is deterministic: keys sorted, two-space indent, a trailing newline, and an
//! `integrity` member over the canonical text (see [`super::integrity`]). Decoding goes parse
//! (strict) → detect version → validate against that version's schema → verify integrity →
//! migrate to the current version → typed value.

use super::beside;
use super::check::check;
use super::error::{EncodeError, LoadError};
use super::integrity;
use super::json::parse_strict;
use super::model::Checkpoint;
use super::{migrate, schema, CURRENT_VERSION};
use serde_json::Value;

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

/// The document as written, in sorted key order (every model type declares its fields
/// alphabetically by JSON name, and maps are sorted); `integrity` holds a placeholder of the
/// checksum's length, overwritten in place once the rest is hashed ([`Unsealed::seal`]).
#[derive(serde::Serialize)]
struct Doc<'a> {
    #[serde(rename = "$schema")]
    schema: &'a str,
    agent_id: &'a str,
    execution_id: &'a crate::ExecutionId,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    extensions: &'a super::JsonObject,
    id: &'a crate::CheckpointId,
    integrity: &'a str,
    metadata: &'a super::Metadata,
    parent_id: &'a Option<crate::CheckpointId>,
    snapshot: &'a super::Snapshot,
    timestamp: &'a crate::Timestamp,
    version: &'a str,
}

impl<'a> Doc<'a> {
    fn of(c: &'a Checkpoint) -> Self {
        Self {
            schema: &c.schema,
            agent_id: &c.agent_id,
            execution_id: &c.execution_id,
            extensions: &c.extensions,
            id: &c.id,
            integrity: integrity::PLACEHOLDER,
            metadata: &c.metadata,
            parent_id: &c.parent_id,
            snapshot: &c.snapshot,
            timestamp: &c.timestamp,
            version: &c.version,
        }
    }
}

/// Encodes a checkpoint as its file bytes: the canonical text (keys sorted, two-space indent,
/// a trailing newline) with the `integrity` line at its sorted place.
pub fn encode(ckpt: &Checkpoint) -> Result<Vec<u8>, EncodeError> {
    encode_unsealed(ckpt, 0).map(Unsealed::seal)
}

/// [`encode`] but for the checksum: the bytes with a placeholder where the checksum goes, to be
/// sealed where it suits the caller (a hybrid store seals on the thread that writes the file,
/// while its rows are written). `capacity` is the expected length (0 when unknown).
pub fn encode_unsealed(ckpt: &Checkpoint, capacity: usize) -> Result<Unsealed, EncodeError> {
    check(ckpt)?;
    write_unsealed_into(ckpt, Vec::with_capacity(capacity.max(16 * 1024)))
}

/// [`encode_unsealed`] of a checkpoint [`check`] accepted, into `text`, a buffer whose earlier
/// content is cleared and whose memory is reused: a writer that gives back the bytes of each
/// file it wrote spares the allocator fresh pages for the next (`FileStore::give_back`).
pub(super) fn write_unsealed_into(
    ckpt: &Checkpoint,
    mut text: Vec<u8>,
) -> Result<Unsealed, EncodeError> {
    let invalid = |message: String| EncodeError::Invalid {
        pointer: String::new(),
        message,
    };
    text.clear();
    integrity::write_canonical(&mut text, &Doc::of(ckpt)).map_err(|e| invalid(e.to_string()))?;
    let line = integrity::placeholder_line(&text)
        .ok_or_else(|| invalid("canonical text has no top-level integrity member".into()))?;
    Ok(Unsealed {
        text,
        line,
        checksum: None,
    })
}

/// A checkpoint's file bytes but for its checksum (see [`encode_unsealed`]).
#[derive(Debug, Clone)]
pub struct Unsealed {
    text: Vec<u8>,
    /// Where the `integrity` line is (its newline included).
    line: std::ops::Range<usize>,
    /// The checksum, once computed ([`Unsealed::compute_checksum`]).
    checksum: Option<String>,
}

impl Unsealed {
    /// The length of the sealed bytes (the checksum takes the placeholder's place).
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether there are no bytes (never, for a document).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The bytes, the placeholder where the checksum goes (what a journal keeps of a save).
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// Bytes [`text`](Self::text) gave back (read again from a journal): `None` unless they
    /// hold the placeholder's line.
    pub fn from_text(text: Vec<u8>) -> Option<Self> {
        let line = integrity::placeholder_line(&text)?;
        Some(Self {
            text,
            line,
            checksum: None,
        })
    }

    /// The checksum of the canonical text (everything but the `integrity` line): what
    /// [`seal`](Self::seal) writes. Computed here, by a caller that has time for it now (a
    /// journal's save, while the disk writes its record), and given back with
    /// [`keep_checksum`](Self::keep_checksum) so that sealing does not hash again.
    pub fn compute_checksum(&self) -> String {
        let Self { text, line, .. } = self;
        integrity::digest(&[&text[..line.start], &text[line.end..]])
    }

    /// Keeps `checksum`, which [`compute_checksum`](Self::compute_checksum) gave for these
    /// bytes, for [`seal`](Self::seal).
    pub fn keep_checksum(&mut self, checksum: String) {
        debug_assert_eq!(checksum, self.compute_checksum());
        self.checksum = Some(checksum);
    }

    /// Hashes the canonical text (everything but the `integrity` line) and writes the checksum
    /// in place of the placeholder: the file's bytes.
    pub fn seal(mut self) -> Vec<u8> {
        let digest = match self.checksum.take() {
            Some(kept) => kept,
            None => self.compute_checksum(),
        };
        let Self { mut text, line, .. } = self;
        integrity::fill_placeholder(&mut text[line], &digest);
        text
    }

    /// Starts computing the checksum on the helper thread that [`super::decode_known_shared`]
    /// hashes on, for a caller that needs the checksum later and not the bytes (a database
    /// store, which writes its rows meanwhile). Wake the helper first, before encoding, with
    /// [`prepare_checksum_beside`]: waking it takes longer than a small document's hash.
    pub fn checksum_beside(self) -> PendingChecksum {
        let Self { text, line, .. } = self;
        PendingChecksum(beside::start(&std::sync::Arc::new(text), line))
    }
}

/// A checksum being computed beside the caller ([`Unsealed::checksum_beside`]).
pub struct PendingChecksum(beside::Pending);

impl PendingChecksum {
    /// The checksum (`sha256:` and 64 hex digits): the helper's, or computed here if the helper
    /// has not started on it (busy, or no core to run on).
    pub fn finish(&self) -> String {
        self.0.finish()
    }

    /// Whether the helper has started on it, waiting up to `within` for it to: a caller that
    /// would otherwise hash later, at a worse moment (holding a lock), can hash now instead.
    pub fn started(&self, within: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + within;
        loop {
            if self.0.started() {
                return true;
            }
            if std::time::Instant::now() >= until {
                return false;
            }
            std::hint::spin_loop();
        }
    }
}

impl std::fmt::Debug for PendingChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PendingChecksum")
    }
}

/// Wakes the helper thread ahead of an [`Unsealed::checksum_beside`] this thread is about to
/// call (nothing if it is awake already).
pub fn prepare_checksum_beside() {
    beside::nudge();
}

/// Decodes file bytes into a checkpoint of the current format (see the module docs).
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded, LoadError> {
    let doc = parse(bytes, limits)?;
    decode_inner(doc, Some(bytes))
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
pub fn decode_value(doc: Value) -> Result<Decoded, LoadError> {
    decode_inner(doc, None)
}

/// `text` is the document's bytes when known: it lets integrity be verified without
/// re-serializing (see [`integrity::verify`]).
fn decode_inner(mut doc: Value, text: Option<&[u8]>) -> Result<Decoded, LoadError> {
    let version = version_of(&doc)?;
    let source_version = version.to_string();
    let current = migrate::current();
    // Any newer version is refused, a newer minor or patch of the current major included: caf
    // would not understand its additions, and rewriting the file would drop them.
    if version > current {
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
    let stored = match &mut doc {
        Value::Object(m) => m.remove("integrity"),
        _ => None,
    };
    let rule = super::versions::find(&source_version).map(|v| v.integrity);
    if rule == Some(super::versions::Integrity::Sha256Canonical) {
        let stored = stored.as_ref().and_then(Value::as_str).unwrap_or_default();
        integrity::verify(&doc, text, stored)?;
    }
    let doc = migrate::to_current(&version, doc)?;
    let checkpoint = typed(doc)?;
    check(&checkpoint).map_err(
        |EncodeError::Invalid { pointer, message }| LoadError::Invalid { pointer, message },
    )?;
    Ok(Decoded {
        checkpoint,
        source_version,
    })
}

/// The typed checkpoint of a valid current-version document. The schema has already passed, so
/// a failure here is rare (a counter written as `1.0`, say); it is located with a second, slower
/// pass that tracks the path.
/// Brings a checkpoint stored under an older format version (a database row written by an
/// older caf) to the current version, through the migration steps. A current one is returned as
/// it is.
pub fn upgrade(c: Checkpoint) -> Result<Checkpoint, LoadError> {
    if c.version == CURRENT_VERSION {
        return Ok(c);
    }
    let version = semver::Version::parse(&c.version).map_err(|_| LoadError::MalformedVersion {
        found: c.version.chars().take(64).collect(),
    })?;
    let doc = serde_json::to_value(&c).map_err(|e| LoadError::Invalid {
        pointer: String::new(),
        message: e.to_string(),
    })?;
    typed(migrate::to_current(&version, doc)?)
}

fn typed(doc: Value) -> Result<Checkpoint, LoadError> {
    use serde::Deserialize;
    match Checkpoint::deserialize(&doc) {
        Ok(c) => Ok(c),
        Err(e) => {
            let (pointer, message) = match serde_path_to_error::deserialize::<_, Checkpoint>(&doc) {
                Err(located) => (
                    super::json::path_pointer(located.path()),
                    located.into_inner().to_string(),
                ),
                Ok(_) => (String::new(), e.to_string()),
            };
            Err(LoadError::Invalid { pointer, message })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{
        Branch, CheckpointReason, CompletedStep, Context, Metadata, PlanStep, Progress, Snapshot,
        Thought, ThoughtChain, ToolCall, ToolState, ToolStatus,
    };
    use crate::{CheckpointId, ExecutionId, Timestamp};
    use serde_json::json;
    use std::sync::Arc;

    fn obj(v: Value) -> super::super::JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    /// A checkpoint with every optional field set.
    fn full() -> Checkpoint {
        let t = Timestamp::from_micros(1_738_790_400_123_456);
        Checkpoint {
            schema: schema::SCHEMA_URL.into(),
            version: CURRENT_VERSION.into(),
            id: CheckpointId::new("ckpt_full").unwrap(),
            parent_id: Some(CheckpointId::new("ckpt_parent").unwrap()),
            execution_id: ExecutionId::new("exec_1").unwrap(),
            agent_id: "agent".into(),
            timestamp: t,
            metadata: Metadata {
                step_number: 2,
                tokens_used: 10,
                duration_ms: 5,
                checkpoint_reason: CheckpointReason::Other("custom_reason".into()),
                name: Some("n".into()),
                description: Some("d".into()),
                labels: vec!["b".into(), "a".into()],
                agent_name: Some("Agent".into()),
                branch: Some(Branch {
                    reason: Some("try".into()),
                }),
                extensions: obj(json!({"z": 1, "a": [1, {"y": 2, "x": 3}]})),
            },
            snapshot: Snapshot {
                thought_chain: ThoughtChain {
                    current_thought_id: Some("th_1".into()),
                    thoughts: vec![Arc::new(Thought {
                        id: "th_1".into(),
                        kind: "reasoning".into(),
                        content: "é \u{0} \"q\"\n".into(),
                        confidence: Some(0.85),
                        parent_id: Some("th_0".into()),
                        created_at: t,
                        reasoning: Some("why".into()),
                        alternatives: vec![json!({"option": "x"})],
                        children: vec!["th_2".into()],
                        metadata: obj(json!({"model": "m"})),
                        extensions: obj(json!({"old": true})),
                    })],
                },
                context: Context {
                    variables: obj(json!({"b": 1, "a": 2.5})),
                    state: obj(json!({"k": null})),
                    history: vec![json!(1)],
                    messages: vec![json!({"role": "user", "content": "hi"})],
                    memory: vec![json!({"key": "k"})],
                },
                tool_state: ToolState {
                    calls: vec![Arc::new(ToolCall {
                        id: "call_1".into(),
                        tool_id: "search".into(),
                        args: json!({"q": "x"}),
                        status: ToolStatus::Completed,
                        result: Some(json!([1, 2])),
                        success: Some(true),
                        error: Some("none".into()),
                        started_at: Some(t),
                        completed_at: Some(t),
                        duration_ms: Some(3),
                        extensions: obj(json!({"e": 1})),
                    })],
                    results: obj(json!({"search": [1, 2]})),
                    last_call_id: Some("call_1".into()),
                },
                progress: Progress {
                    step_number: 2,
                    total_steps: Some(3),
                    iterations_completed: 1,
                    completed_steps: vec![CompletedStep {
                        name: "a".into(),
                        result: Some(json!("r")),
                        duration_ms: Some(1),
                        completed_at: t,
                    }],
                    pending_steps: vec!["b".into()],
                    plan: vec![
                        PlanStep {
                            status: crate::format::StepStatus::Completed,
                            ..PlanStep::new("a")
                        },
                        PlanStep {
                            dependencies: vec!["a".into()],
                            ..PlanStep::new("b")
                        },
                    ],
                    task: Some("t".into()),
                    last_error: None,
                },
            },
            extensions: obj(json!({"x_custom": {"note": "kept"}})),
        }
    }

    #[test]
    fn json_objects_keep_keys_sorted() {
        // Canonical form relies on serde_json's Map being a BTreeMap (no `preserve_order`).
        let v: Value = serde_json::from_str(r#"{"b":1,"a":{"d":1,"c":2}}"#).unwrap();
        assert_eq!(v.to_string(), r#"{"a":{"c":2,"d":1},"b":1}"#);
    }

    #[test]
    fn encoding_is_canonical_and_round_trips() {
        let c = full();
        let bytes = encode(&c).unwrap();
        assert!(bytes.ends_with(b"}\n"));
        // Writing through a sorted Value gives the same bytes: the struct order is sorted.
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let mut resorted = serde_json::to_vec_pretty(&doc).unwrap();
        resorted.push(b'\n');
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            String::from_utf8(resorted).unwrap()
        );
        // And the integrity is the digest of the sorted compact form without it.
        assert_eq!(
            doc["integrity"].as_str().unwrap(),
            integrity::of_value(&doc)
        );
        let d = decode(&bytes, &Limits::default()).unwrap();
        assert_eq!(d.checkpoint, c);
        assert_eq!(d.source_version, CURRENT_VERSION);
        assert_eq!(encode(&d.checkpoint).unwrap(), bytes);
    }

    #[test]
    fn a_checksum_computed_before_sealing_seals_the_same_bytes() {
        let c = full();
        let unsealed = encode_unsealed(&c, 0).unwrap();
        let checksum = unsealed.compute_checksum();
        let sealed = encode(&c).unwrap();
        assert_eq!(
            Some(checksum.as_str()),
            crate::store::stated_integrity(&sealed).as_deref()
        );
        let mut kept = unsealed.clone();
        kept.keep_checksum(checksum);
        assert_eq!(kept.seal(), sealed);
        assert_eq!(unsealed.seal(), sealed);
    }

    #[test]
    fn upgrade_brings_an_older_stored_checkpoint_to_the_current_version() {
        let c = full();
        let mut old = c.clone();
        old.version = "1.0.0".into();
        old.schema = "https://caf.dev/schemas/checkpoint-1.0.0.schema.json".into();
        assert_eq!(upgrade(old).unwrap(), c);
        assert_eq!(upgrade(c.clone()).unwrap(), c);
        let mut odd = c;
        odd.version = "0.9.0".into();
        assert!(matches!(
            upgrade(odd),
            Err(LoadError::UnknownVersion { .. })
        ));
    }

    #[test]
    fn a_changed_byte_is_reported_as_corruption() {
        let bytes = encode(&full()).unwrap();
        let text = String::from_utf8(bytes)
            .unwrap()
            .replace("\"why\"", "\"who\"");
        match decode(text.as_bytes(), &Limits::default()) {
            Err(LoadError::Corrupted { .. }) => {}
            other => panic!("expected Corrupted, got {other:?}"),
        }
    }

    #[test]
    fn key_order_in_the_file_does_not_matter() {
        let bytes = encode(&full()).unwrap();
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        // Re-emit with keys in reverse order: same content, same checksum.
        fn reversed(v: &Value) -> String {
            match v {
                Value::Object(m) => {
                    let items: Vec<String> = m
                        .iter()
                        .rev()
                        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), reversed(v)))
                        .collect();
                    format!("{{{}}}", items.join(","))
                }
                Value::Array(a) => {
                    format!("[{}]", a.iter().map(reversed).collect::<Vec<_>>().join(","))
                }
                other => other.to_string(),
            }
        }
        let shuffled = reversed(&doc);
        assert_ne!(shuffled.as_bytes(), &bytes[..]);
        assert_eq!(
            decode(shuffled.as_bytes(), &Limits::default())
                .unwrap()
                .checkpoint,
            full()
        );
    }

    #[test]
    fn check_refuses_what_the_schema_refuses() {
        let mut c = full();
        Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).confidence = Some(f64::NAN);
        assert!(encode(&c).is_err());
        let mut c = full();
        c.metadata.labels = vec!["a".into(), "a".into()];
        assert!(encode(&c).is_err());
        let mut c = full();
        Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0]).kind = "Not Snake".into();
        assert!(encode(&c).is_err());
    }
}
