//! The integrity checksum.
//!
//! `integrity` is `sha256:` + the lower-case hex SHA-256 of the document's **canonical text**: the
//! document without its `integrity` member, pretty-printed with object keys sorted by byte order,
//! a two-space indent, `": "` after keys, and a trailing newline — exactly what caf writes, minus
//! the `integrity` line. (In Python: `json.dumps(doc, indent=2, sort_keys=True,
//! ensure_ascii=False) + "\n"`.)
//!
//! Writing costs one serialization: the document is written with a placeholder of the
//! checksum's length in its `integrity` member (before `metadata`, its sorted place), then the
//! text around that line is hashed and the checksum written over the placeholder. Reading a
//! file caf wrote costs one hash of the file minus that line; a file whose layout was changed
//! (re-indented, keys reordered) is verified by re-serializing its content canonically.

use super::error::LoadError;
use serde_json::Value;
use sha2::{Digest, Sha256};

const HEX: &[u8; 16] = b"0123456789abcdef";
const PREFIX: &[u8] = b"\n  \"integrity\": \"";
const METADATA: &[u8] = b"\n  \"metadata\": ";

/// What the `integrity` member holds until the document is hashed: as long as a checksum.
pub(super) const PLACEHOLDER: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Writes the canonical text of `v` (pretty, two-space indent, trailing newline).
pub fn write_canonical<T: serde::Serialize + ?Sized>(
    out: &mut Vec<u8>,
    v: &T,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(
        &mut *out,
        serde_json::ser::PrettyFormatter::with_indent(b"  "),
    );
    v.serialize(&mut ser)?;
    out.push(b'\n');
    Ok(())
}

/// `sha256:` + the hex digest of the concatenated parts.
pub fn digest(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in h.finalize().iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// The integrity of a document value (its own `integrity` member, if any, is left out).
pub fn of_value(doc: &Value) -> String {
    let mut text = Vec::new();
    match doc {
        Value::Object(m) if m.contains_key("integrity") => {
            let mut m = m.clone();
            m.remove("integrity");
            let _ = write_canonical(&mut text, &m);
        }
        // Serializing a Value into memory cannot fail.
        other => {
            let _ = write_canonical(&mut text, other);
        }
    }
    digest(&[&text])
}

/// Where the placeholder `integrity` line of freshly written text is (the range of the line,
/// its newline included).
pub(super) fn placeholder_line(text: &[u8]) -> Option<std::ops::Range<usize>> {
    let (before, after) = without_line(text, PLACEHOLDER)?;
    Some(before.len()..text.len() - after.len())
}

/// Writes `integrity` over the placeholder in `line` (a line [`placeholder_line`] found).
pub(super) fn fill_placeholder(line: &mut [u8], integrity: &str) {
    debug_assert_eq!(integrity.len(), PLACEHOLDER.len());
    let value = PREFIX.len() - 1;
    line[value..value + integrity.len()].copy_from_slice(integrity.as_bytes());
}

/// Inserts the `integrity` line into canonical text, before the top-level `metadata` member
/// (caf's encoder writes the line in place instead; this is for text built otherwise, such as
/// a test's forged document). Top-level members are the only lines indented by exactly two
/// spaces, and JSON strings never hold a raw newline, so the search cannot match inside a
/// value.
pub fn splice(text: Vec<u8>, integrity: &str) -> Option<Vec<u8>> {
    let at = find(&text, METADATA)? + 1;
    let mut out = Vec::with_capacity(text.len() + integrity.len() + 24);
    out.extend_from_slice(&text[..at]);
    out.extend_from_slice(b"  \"integrity\": \"");
    out.extend_from_slice(integrity.as_bytes());
    out.extend_from_slice(b"\",\n");
    out.extend_from_slice(&text[at..]);
    Some(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The file's bytes without its top-level integrity line, as two slices, if it has one shaped
/// as caf writes it: the first line that starts like a top-level `integrity` member must be
/// exactly `  "integrity": "<stored>",`.
pub(super) fn without_line<'a>(text: &'a [u8], stored: &str) -> Option<(&'a [u8], &'a [u8])> {
    let start = find(text, PREFIX)? + 1;
    let line_end = start + PREFIX.len() - 1 + stored.len() + 3; // `",\n`
    let line = text.get(start..line_end)?;
    let expected_tail = [stored.as_bytes(), b"\",\n"].concat();
    (line.get(PREFIX.len() - 1..)? == expected_tail.as_slice())
        .then(|| (&text[..start], &text[line_end..]))
}

/// Checks a document's stored integrity. `doc` is the document without its `integrity` member;
/// `text`, when given, is the file it was parsed from.
pub fn verify(doc: &Value, text: Option<&[u8]>, stored: &str) -> Result<(), LoadError> {
    if let Some((before, after)) = text.and_then(|t| without_line(t, stored)) {
        if digest(&[before, after]) == stored {
            return Ok(());
        }
    }
    let actual = of_value(doc);
    if actual == stored {
        Ok(())
    } else {
        Err(LoadError::Corrupted {
            expected: stored.to_string(),
            actual,
        })
    }
}
