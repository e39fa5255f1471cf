//! Decoding a file whose content is already known valid: typed straight from the bytes, without
//! the JSON value tree and without the schema, with the integrity still verified.
//!
//! The caller vouches for nothing but a checksum: `expected` is the integrity that a trusted
//! record (the file store's index) holds for content that was validated before — encoded by caf
//! from a checked checkpoint, or read through the full [`decode`]. The bytes are accepted on the
//! fast path only if
//!
//! 1. the file's first line that starts like a top-level `integrity` member is exactly
//!    `  "integrity": "<expected>",`,
//! 2. the rest of the file hashes to `expected` (SHA-256),
//! 3. the bytes parse, typed, as a document of the current version with exactly one top-level
//!    `integrity` member, stating `expected` (duplicate keys refused everywhere, see
//!    [`super::unique_keys`]), within the nesting limit, and
//! 4. the checkpoint passes [`check`].
//!
//! Why that is the validated document: by 2, the file minus that line is byte for byte the
//! validated file minus the line its record was read from. JSON strings hold no raw newline, so
//! the line sits between two members of some object. By 3, the top-level `integrity` states
//! `expected`; the validated file's own top-level `integrity` is still in the rest of the file
//! unless it was that very line, and it states the checksum of content that includes any nested
//! copy of the line, so it cannot state `expected` unless it is the line (SHA-256 has no known
//! fixed point). So the line is the validated top-level member, at most moved among the top-level
//! members, and the content is the validated content. Anything else — a changed byte, a stale
//! record, an older version, a layout caf does not write, a typed failure, a value `check`
//! refuses — goes through [`decode`], which reports the error exactly as it always has.
//!
//! A first look at the end of the file (a current-version document, as caf lays it out, ends with
//! its `version` line) spares files of older versions the hash and the typed parse.

use super::check::{check_depth, check_values, STRUCTURAL_DEPTH};
use super::codec::{decode, Decoded, Limits, MAX_DEPTH_CAP};
use super::error::LoadError;
use super::model::{Checkpoint, JsonObject, Metadata, Snapshot};
use super::unique_keys::object;
use super::CURRENT_VERSION;
use super::{hash_helper, integrity};
use crate::clock::Timestamp;
use crate::id::{CheckpointId, ExecutionId};
use serde::Deserialize;
use std::sync::Arc;

/// From this size on, [`decode_known_shared`] computes the checksum on a helper thread (one
/// long-lived thread for all callers; a caller hashes itself if the helper has not started its
/// job) while it parses; below it, handing the job over costs more than it saves.
pub const PARALLEL_HASH_MIN_BYTES: usize = 64 * 1024;

/// A stored document of the current version: [`Checkpoint`]'s fields plus `integrity`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    #[serde(rename = "$schema")]
    schema: String,
    agent_id: String,
    execution_id: ExecutionId,
    #[serde(default, deserialize_with = "object")]
    extensions: JsonObject,
    id: CheckpointId,
    integrity: String,
    metadata: Metadata,
    parent_id: Option<CheckpointId>,
    snapshot: Snapshot,
    timestamp: Timestamp,
    version: String,
}

impl Stored {
    fn into_checkpoint(self) -> Checkpoint {
        Checkpoint {
            schema: self.schema,
            agent_id: self.agent_id,
            execution_id: self.execution_id,
            extensions: self.extensions,
            id: self.id,
            metadata: self.metadata,
            parent_id: self.parent_id,
            snapshot: self.snapshot,
            timestamp: self.timestamp,
            version: self.version,
        }
    }
}

/// Decodes file bytes whose content a trusted record (a file store's index) says hashes to
/// `expected_integrity`, the checksum of content validated before.
///
/// When the bytes are that content — their integrity line states `expected_integrity`, the rest
/// of the file hashes to it, and they parse, typed, as a current-version document whose one
/// top-level `integrity` is it, within `limits`, passing [`check`](super::check) — the checkpoint
/// is typed straight from the bytes, without the JSON value tree and the schema (which that
/// content already passed). Otherwise it is [`decode`]d. The result, error included, is what
/// [`decode`] gives.
pub fn decode_known(
    bytes: &[u8],
    limits: &Limits,
    expected_integrity: &str,
) -> Result<Decoded, LoadError> {
    match fast(bytes, None, limits, expected_integrity) {
        Some(decoded) => Ok(decoded),
        None => decode(bytes, limits),
    }
}

/// [`decode_known`] for bytes that can be shared with another thread: from
/// [`PARALLEL_HASH_MIN_BYTES`] on, the checksum is computed on a helper thread while the bytes
/// are parsed on this one. Same result.
pub fn decode_known_shared(
    bytes: &Arc<Vec<u8>>,
    limits: &Limits,
    expected_integrity: &str,
) -> Result<Decoded, LoadError> {
    match fast(bytes, Some(bytes), limits, expected_integrity) {
        Some(decoded) => Ok(decoded),
        None => decode(bytes, limits),
    }
}

/// Readies the helper thread of [`decode_known_shared`] for bytes of `len` about to be read
/// (waking a thread takes longer than reading a file; see `hash_helper`). Nothing for bytes
/// too small to be hashed beside the parse.
pub(crate) fn prepare_shared(len: u64) {
    if len >= PARALLEL_HASH_MIN_BYTES as u64 {
        hash_helper::nudge();
    }
}

/// The fast path of [`decode_known`] alone: `None` where it would fall back to [`decode`].
pub fn fast_path(bytes: &[u8], limits: &Limits, expected_integrity: &str) -> Option<Decoded> {
    fast(bytes, None, limits, expected_integrity)
}

/// The fast path; `shared` is `bytes` when they can be hashed on the helper thread.
fn fast(
    bytes: &[u8],
    shared: Option<&Arc<Vec<u8>>>,
    limits: &Limits,
    expected: &str,
) -> Option<Decoded> {
    if bytes.len() as u64 > limits.max_bytes {
        return None;
    }
    let max_depth = limits.max_depth.min(MAX_DEPTH_CAP);
    if max_depth < STRUCTURAL_DEPTH {
        return None;
    }
    if !ends_with_current_version(bytes) {
        return None;
    }
    let (before, after) = integrity::without_line(bytes, expected)?;
    // Validating the whole text as UTF-8 once (a few µs) is cheaper than serde_json checking
    // each string it borrows from a byte slice.
    let text = std::str::from_utf8(bytes).ok()?;
    let parse = || serde_json::from_str::<Stored>(text).ok();
    let stored = match shared.filter(|_| bytes.len() >= PARALLEL_HASH_MIN_BYTES) {
        Some(shared) => {
            let skip = before.len()..bytes.len() - after.len();
            let pending = hash_helper::start(shared, skip);
            let stored = parse()?;
            (pending.finish() == expected).then_some(stored)?
        }
        None => {
            // The checksum first: bytes that are not the recorded ones are not parsed twice.
            if integrity::digest(&[before, after]) != expected {
                return None;
            }
            parse()?
        }
    };
    if stored.version != CURRENT_VERSION || stored.integrity != expected {
        return None;
    }
    let checkpoint = stored.into_checkpoint();
    // `check` is `check_depth` at the default limit and then `check_values`; a value that fits
    // the smaller of two limits fits both.
    check_depth(&checkpoint, max_depth.min(Limits::default().max_depth)).ok()?;
    check_values(&checkpoint).ok()?;
    Some(Decoded {
        checkpoint,
        source_version: CURRENT_VERSION.to_string(),
    })
}

/// Whether the document ends as caf writes one of the current version: with its `version`
/// member, the last in key order. A cheap first look, so that a file of an older version (which
/// `decode` migrates) costs neither a hash nor a typed parse here; what is accepted is decided by
/// the checks that follow, never by the layout.
fn ends_with_current_version(bytes: &[u8]) -> bool {
    const HEAD: &[u8] = b"\n  \"version\": \"";
    const TAIL: &[u8] = b"\"\n}\n";
    bytes
        .strip_suffix(TAIL)
        .and_then(|b| b.strip_suffix(CURRENT_VERSION.as_bytes()))
        .is_some_and(|b| b.ends_with(HEAD))
}
