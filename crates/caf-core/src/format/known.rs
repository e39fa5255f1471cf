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
//! **With the file's digest.** A record may also hold the digest of the whole file as caf wrote
//! or validated it ([`file_digest`](super::file_digest): BLAKE3, a cryptographic hash about four
//! times quicker than SHA-256 here). Bytes that hash to it are that very file, integrity line
//! included, so 1 and 2 are known without computing the SHA-256; 3 and 4 are checked as above.
//! A record is trusted alike whichever it holds: one that could vouch for other bytes with a
//! digest could as well with a checksum, and the typed parse and [`check`] still refuse what
//! they refuse (`restore_fast_forged.rs`). Bytes that do not hash to the digest are [`decode`]d.
//!
//! **Beside the caller.** For a big file shared with the helper thread ([`decode_known_file`]),
//! the helper proves the bytes while the caller parses; with the quick digest it then also types
//! the snapshot's thought chain, found by caf's layout, while the caller types the rest (the
//! chain cut out of a copy of the text). The helper's chain is taken only if the caller's parse
//! found the cut to be the chain; otherwise (a layout caf does not write) the caller types the
//! whole text itself, so such a layout costs time, never correctness. Work the helper has not
//! started when the caller needs it is taken back and done by the caller.
//!
//! A first look at the end of the file (a current-version document, as caf lays it out, ends with
//! its `version` line) spares files of older versions the hash and the typed parse.

use super::beside::{self, Beside};
use super::check::{check_depth, check_values, STRUCTURAL_DEPTH};
use super::codec::{decode, Decoded, Limits, MAX_DEPTH_CAP};
use super::digest::Recorded;
use super::error::LoadError;
use super::integrity;
use super::model::{
    Checkpoint, Context, JsonObject, Metadata, Progress, Snapshot, Thought, ThoughtChain, ToolState,
};
use super::unique_keys::object;
use super::CURRENT_VERSION;
use crate::clock::Timestamp;
use crate::id::{CheckpointId, ExecutionId};
use memchr::memmem;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::ops::Range;
use std::sync::Arc;

/// From this size on, [`decode_known_shared`] computes the checksum on a helper thread (one
/// long-lived thread for all callers; a caller hashes itself if the helper has not started its
/// job) while it parses; below it, handing the job over costs more than it saves.
pub const PARALLEL_HASH_MIN_BYTES: usize = 64 * 1024;

/// A stored document of the current version: [`Checkpoint`]'s fields plus `integrity`, with the
/// snapshot typed whole ([`Snapshot`]) or but for its thought chain ([`SnapshotApart`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored<S> {
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
    snapshot: S,
    timestamp: Timestamp,
    version: String,
}

impl<S> Stored<S> {
    /// The checkpoint, its snapshot made of the stored one by `snapshot`.
    fn into_checkpoint(self, snapshot: impl FnOnce(S) -> Snapshot) -> Checkpoint {
        Checkpoint {
            schema: self.schema,
            agent_id: self.agent_id,
            execution_id: self.execution_id,
            extensions: self.extensions,
            id: self.id,
            metadata: self.metadata,
            parent_id: self.parent_id,
            snapshot: snapshot(self.snapshot),
            timestamp: self.timestamp,
            version: self.version,
        }
    }
}

/// [`Snapshot`] with its thought chain left as text, typed beside the rest ([`typed_apart`]):
/// serde_json has checked that it is one JSON value, and says where it is in the bytes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotApart<'a> {
    context: Context,
    progress: Progress,
    #[serde(borrow)]
    thought_chain: &'a RawValue,
    tool_state: ToolState,
}

/// Where the thought chain of a document laid out as caf writes it is: the value of the member
/// on the line that starts `    "thought_chain": ` up to the line `    "tool_state": `. Found by
/// the layout only, so it is used only where it is the very value the parse found (see
/// [`typed_apart`]).
fn thought_chain_range(bytes: &[u8]) -> Option<Range<usize>> {
    const KEY: &[u8] = b"\n    \"thought_chain\": ";
    const NEXT: &[u8] = b",\n    \"tool_state\": ";
    let start = memmem::find(bytes, KEY)? + KEY.len();
    let end = start + memmem::find(&bytes[start..], NEXT)?;
    Some(start..end)
}

/// [`ThoughtChain`] with its thoughts not yet shared: what the helper thread types. Each thought
/// goes into its [`Arc`] on the caller's thread ([`ChainApart::shared`]), the thread that frees
/// it later: `Arc` blocks allocated on the helper and freed by the caller made the helper's next
/// parse slower (137 µs instead of 109 per decode of the agent-run workload's checkpoint at step
/// 100; docs/benchmarks.md, 2026-11-25 06:40).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainApart {
    #[serde(default)]
    current_thought_id: Option<String>,
    thoughts: Vec<Thought>,
}

impl ChainApart {
    fn shared(self) -> ThoughtChain {
        ThoughtChain {
            current_thought_id: self.current_thought_id,
            thoughts: self.thoughts.into_iter().map(Arc::new).collect(),
        }
    }
}

/// Types the thought chain at `range` of `bytes` ([`thought_chain_range`]), `None` if it does
/// not parse.
fn thought_chain_at(bytes: &[u8], range: Range<usize>) -> Option<ChainApart> {
    std::str::from_utf8(&bytes[range])
        .ok()
        .and_then(thought_chain)
}

fn thought_chain(text: &str) -> Option<ChainApart> {
    serde_json::from_str(text).ok()
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
    match fast(bytes, None, limits, expected_integrity, None) {
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
    decode_known_file(bytes, limits, expected_integrity, None)
}

/// [`decode_known_shared`] for a file whose record also holds the digest of its bytes
/// ([`file_digest`](super::file_digest)): a file that hashes to `file_digest` is the file the
/// record was made of, so the fast path needs no SHA-256; and as that digest is quick, the helper
/// thread then types the snapshot's thought chain while this thread types the rest. A file that
/// does not hash to it is [`decode`]d. Same result as [`decode`], error included.
pub fn decode_known_file(
    bytes: &Arc<Vec<u8>>,
    limits: &Limits,
    expected_integrity: &str,
    file_digest: Option<&str>,
) -> Result<Decoded, LoadError> {
    match fast(bytes, Some(bytes), limits, expected_integrity, file_digest) {
        Some(decoded) => Ok(decoded),
        None => decode(bytes, limits),
    }
}

/// Readies the helper thread of [`decode_known_shared`] for bytes of `len` about to be read
/// (waking a thread takes longer than reading a file; see `beside`). Nothing for bytes
/// too small to be hashed beside the parse.
pub(crate) fn prepare_shared(len: u64) {
    if len >= PARALLEL_HASH_MIN_BYTES as u64 {
        beside::nudge();
    }
}

/// The fast path of [`decode_known`] alone: `None` where it would fall back to [`decode`].
pub fn fast_path(bytes: &[u8], limits: &Limits, expected_integrity: &str) -> Option<Decoded> {
    fast(bytes, None, limits, expected_integrity, None)
}

/// The fast path of [`decode_known_file`] alone, on this thread: `None` where it would fall back
/// to [`decode`].
pub fn fast_path_file(
    bytes: &[u8],
    limits: &Limits,
    expected_integrity: &str,
    file_digest: Option<&str>,
) -> Option<Decoded> {
    fast(bytes, None, limits, expected_integrity, file_digest)
}

/// What shows that the bytes are the validated content.
#[derive(Clone)]
enum Proof {
    /// The whole file hashes to the digest its record holds ([`super::file_digest`]).
    Digest(Recorded),
    /// The file but for its integrity line (this range) hashes to the integrity checksum.
    Checksum(Range<usize>),
}

impl Proof {
    /// The digest when the record holds a well-formed one, else the checksum, provided the
    /// file's integrity line states `expected` (`None`: no fast path).
    fn of(bytes: &[u8], expected: &str, digest: Option<&str>) -> Option<Self> {
        if let Some(recorded) = digest.and_then(Recorded::parse) {
            return Some(Self::Digest(recorded));
        }
        let (before, after) = integrity::without_line(bytes, expected)?;
        Some(Self::Checksum(before.len()..bytes.len() - after.len()))
    }

    fn holds(&self, bytes: &[u8], expected: &str) -> bool {
        match self {
            Self::Digest(recorded) => recorded.matches(bytes),
            Self::Checksum(skip) => {
                integrity::digest(&[&bytes[..skip.start], &bytes[skip.end..]]) == expected
            }
        }
    }
}

/// The fast path; `shared` is `bytes` when they can be hashed on the helper thread, `digest` the
/// digest of the file the record holds, if any.
fn fast(
    bytes: &[u8],
    shared: Option<&Arc<Vec<u8>>>,
    limits: &Limits,
    expected: &str,
    digest: Option<&str>,
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
    let proof = Proof::of(bytes, expected, digest)?;
    // Validating the text as UTF-8 once (a few µs) is cheaper than serde_json checking each
    // string it borrows from a byte slice. Where the helper types the thought chain, it
    // validates the chain's text and this thread the rest, after the hand-over.
    let text = || std::str::from_utf8(bytes).ok();
    let checkpoint = match shared.filter(|_| bytes.len() >= PARALLEL_HASH_MIN_BYTES) {
        Some(shared) => {
            let proved = {
                let (bytes, proof, expected) =
                    (Arc::clone(shared), proof.clone(), expected.to_owned());
                move || proof.holds(&bytes, &expected)
            };
            // The digest is quick: the helper then types the thought chain too, while this
            // thread types the rest. The checksum takes about as long as typing all of it.
            let cut = match proof {
                Proof::Digest(_) => thought_chain_range(bytes),
                Proof::Checksum(_) => None,
            };
            let (proved, checkpoint) = match cut {
                Some(cut) => {
                    let (shared, there) = (Arc::clone(shared), cut.clone());
                    let (proved, chain) =
                        beside::both(proved, move || thought_chain_at(&shared, there));
                    (proved, typed_apart(bytes, cut, &chain, expected))
                }
                // With the checksum, or not laid out as caf writes: typed here in one piece.
                None => {
                    let text = text()?;
                    (beside::one(proved), typed_whole(text, expected))
                }
            };
            let checkpoint = checkpoint?;
            proved
                .finish(|| proof.holds(bytes, expected))
                .then_some(checkpoint)?
        }
        None => {
            // The proof first: bytes that are not the recorded ones are not parsed twice.
            if !proof.holds(bytes, expected) {
                return None;
            }
            typed_whole(text()?, expected)?
        }
    };
    // `check` is `check_depth` at the default limit and then `check_values`; a value that fits
    // the smaller of two limits fits both.
    check_depth(&checkpoint, max_depth.min(Limits::default().max_depth)).ok()?;
    check_values(&checkpoint).ok()?;
    Some(Decoded {
        checkpoint,
        source_version: CURRENT_VERSION.to_string(),
    })
}

/// The checkpoint typed from `text` in one piece, if it is of the current version and states
/// `expected`.
fn typed_whole(text: &str, expected: &str) -> Option<Checkpoint> {
    let stored = serde_json::from_str::<Stored<Snapshot>>(text).ok()?;
    check_stored(&stored, expected)?;
    Some(stored.into_checkpoint(|snapshot| snapshot))
}

/// [`typed_whole`] of `bytes`, the thought chain (the bytes `cut`) typed by `chain` on the
/// helper thread while this thread parses the rest: the text with `null` in the chain's place,
/// as copying the rest (a few µs) costs less than skipping the chain's text in the parse (~20 µs
/// for 59 KB). If that `null` is not what the parse found as the snapshot's thought chain (a
/// layout caf does not write, the cut found elsewhere), the text is typed here in one piece.
/// `None` if the bytes are not UTF-8: the cut's ends are ASCII, so the rest is valid where the
/// whole is, and the chain's text is validated where it is typed.
///
/// Why that is the document: the parse found `null`, a whole JSON value, as the chain's value at
/// `cut.start`, and the chain's text `text[cut]` types as one whole JSON value; so the original
/// text, which is the parsed one with that value in the place of `null`, reads the same tokens
/// before and after it, and that value is the chain.
fn typed_apart(
    bytes: &[u8],
    cut: Range<usize>,
    chain: &Beside<Option<ChainApart>>,
    expected: &str,
) -> Option<Checkpoint> {
    const HOLE: &str = "null";
    let head = std::str::from_utf8(&bytes[..cut.start]).ok()?;
    let tail = std::str::from_utf8(&bytes[cut.end..]).ok()?;
    let mut rest = String::with_capacity(head.len() + HOLE.len() + tail.len());
    rest.push_str(head);
    rest.push_str(HOLE);
    rest.push_str(tail);
    let whole = || typed_whole(std::str::from_utf8(bytes).ok()?, expected);
    let Ok(stored) = serde_json::from_str::<Stored<SnapshotApart<'_>>>(&rest) else {
        return whole();
    };
    let raw = stored.snapshot.thought_chain.get();
    let at = raw.as_ptr().addr().wrapping_sub(rest.as_ptr().addr());
    if raw != HOLE || at != cut.start {
        return whole();
    }
    check_stored(&stored, expected)?;
    let thought_chain = chain.finish(|| thought_chain_at(bytes, cut))?.shared();
    Some(stored.into_checkpoint(|apart| Snapshot {
        context: apart.context,
        progress: apart.progress,
        thought_chain,
        tool_state: apart.tool_state,
    }))
}

/// Whether a parsed document is of the current version with `expected` as its integrity.
fn check_stored<S>(stored: &Stored<S>, expected: &str) -> Option<()> {
    (stored.version == CURRENT_VERSION && stored.integrity == expected).then_some(())
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
