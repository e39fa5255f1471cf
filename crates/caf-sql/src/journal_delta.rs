//! A journal record that states a save's text by its difference from an earlier one: how the
//! journal recorded saves before revisions ([`crate::journal_revision`]), and still reads.
//!
//! Two checkpoints of one execution taken a step apart share nearly all their text: the thought
//! chain and the tool calls grow by an item, a few header fields change. A delta against the
//! execution's previous record is a few KB: the runs of text equal to the base, as
//! `(offset, length)` copies, and the rest as it is.
//!
//! **Layout** (little-endian): the text's length (u32) and CRC-32 (u32), then operations, each
//! a tag byte: `C` with a base offset and a length (u32, u32), or `I` with a length (u32) and
//! that many bytes of text. [`apply`] checks every operation against the base and the stated
//! length, and the result against the CRC: a delta that does not rebuild exactly the text it was
//! made from is refused, never half applied.
//!
//! caf no longer writes deltas (what was found before the flush delayed it); the tests make
//! them with a plain writer, which copies the texts' common start and end.

use std::io;

const COPY: u8 = b'C';
const INSERT: u8 = b'I';

/// Why a delta cannot be applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DeltaError {
    #[error("the delta is cut short")]
    Short,
    #[error("the delta states {0} bytes, more than a record may hold")]
    TooLong(u64),
    #[error("operation {0} is neither a copy nor text")]
    Unknown(usize),
    #[error("operation {0} copies beyond the base's {1} bytes")]
    BeyondBase(usize, usize),
    #[error("operation {0} writes beyond the stated length")]
    BeyondLength(usize),
    #[error("the delta rebuilds {0} bytes, not the {1} it states")]
    Length(usize, usize),
    #[error("the text rebuilt does not match the delta's checksum")]
    Checksum,
}

impl From<DeltaError> for io::Error {
    fn from(e: DeltaError) -> Self {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// The text `delta` states against `base`; at most `max_len` bytes.
pub(crate) fn apply(base: &[u8], delta: &[u8], max_len: u64) -> Result<Vec<u8>, DeltaError> {
    let mut r = Reader {
        at: 0,
        bytes: delta,
    };
    let len = r.u32()? as usize;
    let crc = r.u32()?;
    if len as u64 > max_len {
        return Err(DeltaError::TooLong(len as u64));
    }
    let mut out = Vec::with_capacity(len);
    let mut op = 0;
    while r.at < delta.len() {
        op += 1;
        let tag = r.take(1)?[0];
        let piece = match tag {
            COPY => {
                let (from, n) = (r.u32()? as usize, r.u32()? as usize);
                from.checked_add(n)
                    .and_then(|end| base.get(from..end))
                    .ok_or(DeltaError::BeyondBase(op, base.len()))?
            }
            INSERT => {
                let n = r.u32()? as usize;
                r.take(n)?
            }
            _ => return Err(DeltaError::Unknown(op)),
        };
        if out.len() + piece.len() > len {
            return Err(DeltaError::BeyondLength(op));
        }
        out.extend_from_slice(piece);
    }
    if out.len() != len {
        return Err(DeltaError::Length(out.len(), len));
    }
    if crc32fast::hash(&out) != crc {
        return Err(DeltaError::Checksum);
    }
    Ok(out)
}

struct Reader<'a> {
    at: usize,
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DeltaError> {
        let end = self.at.checked_add(n).ok_or(DeltaError::Short)?;
        let piece = self.bytes.get(self.at..end).ok_or(DeltaError::Short)?;
        self.at = end;
        Ok(piece)
    }

    fn u32(&mut self) -> Result<u32, DeltaError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// A delta that rebuilds `text` from `base`: their common start and end as copies, the rest as
/// it is (for the tests of reading deltas).
#[cfg(test)]
pub(crate) fn encode(base: &[u8], text: &[u8]) -> Vec<u8> {
    let start = base.iter().zip(text).take_while(|(a, b)| a == b).count();
    let end = base[start..]
        .iter()
        .rev()
        .zip(text[start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = Vec::new();
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(text).to_le_bytes());
    let copy = |out: &mut Vec<u8>, from: usize, n: usize| {
        out.push(COPY);
        out.extend_from_slice(&(from as u32).to_le_bytes());
        out.extend_from_slice(&(n as u32).to_le_bytes());
    };
    copy(&mut out, 0, start);
    let middle = &text[start..text.len() - end];
    out.push(INSERT);
    out.extend_from_slice(&(middle.len() as u32).to_le_bytes());
    out.extend_from_slice(middle);
    copy(&mut out, base.len() - end, end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bytes before the operations: the text's length and CRC-32.
    const HEAD: usize = 8;

    fn roundtrip(base: &[u8], text: &[u8]) {
        let delta = encode(base, text);
        assert_eq!(apply(base, &delta, u64::MAX).unwrap(), text);
    }

    /// Lines like a pretty-printed document's.
    fn doc(items: &[String], head: &str, tail: &str) -> Vec<u8> {
        let mut t = format!("{{\n  \"id\": \"{head}\",\n  \"items\": [\n");
        for item in items {
            t.push_str(&format!(
                "    {{\n      \"kind\": \"note\",\n      \"text\": \"{item}\"\n    }},\n"
            ));
        }
        t.push_str(&format!("  ],\n  \"tail\": \"{tail}\"\n}}\n"));
        t.into_bytes()
    }

    fn items(n: usize) -> Vec<String> {
        (0..n)
            .map(|k| format!("item {k} says something of its own, {}", k * 7919))
            .collect()
    }

    #[test]
    fn removed_changed_and_moved_lines_still_rebuild_exactly() {
        let all = items(300);
        let before = doc(&all, "a", "b");
        // The first 100 items dropped (a context window sliding), one changed, two added.
        let mut later = all[100..].to_vec();
        later[50] = "changed".into();
        later.push("new one".into());
        later.push("new two".into());
        let after = doc(&later, "a2", "b2");
        roundtrip(&before, &after);
        // Unrelated texts, an empty base or text.
        roundtrip(&before, &[b'x'; 5000]);
        roundtrip(b"", &after);
        roundtrip(&after, b"");
    }

    #[test]
    fn a_delta_that_does_not_rebuild_its_text_is_refused() {
        let before = doc(&items(50), "a", "b");
        let after = doc(&items(51), "c", "d");
        let delta = encode(&before, &after);
        // Another base (one byte longer at its start): the copies take other bytes.
        let other = doc(&items(50), "ax", "b");
        assert!(apply(&other, &delta, u64::MAX) == Err(DeltaError::Checksum));
        // A shorter base: a copy reaches past it.
        assert!(matches!(
            apply(&before[..before.len() / 2], &delta, u64::MAX),
            Err(DeltaError::BeyondBase(..))
        ));
        // Cut short, or longer than allowed.
        assert_eq!(
            apply(&before, &delta[..delta.len() - 1], u64::MAX),
            Err(DeltaError::Short)
        );
        assert_eq!(
            apply(&before, &delta, 10),
            Err(DeltaError::TooLong(after.len() as u64))
        );
        let mut bad = delta.clone();
        bad[HEAD] = b'Z';
        assert_eq!(apply(&before, &bad, u64::MAX), Err(DeltaError::Unknown(1)));
    }

    proptest! {
        /// Whatever the edits, a delta rebuilds exactly the text it was made from.
        #[test]
        fn any_edit_rebuilds_exactly(
            lines in proptest::collection::vec("[a-c ]{0,90}", 0..120),
            edits in proptest::collection::vec((0usize..12_000, 0usize..4, "[a-d\n]{0,200}"), 0..6),
        ) {
            let base: Vec<u8> = lines.join("\n").into_bytes();
            let mut text = base.clone();
            for (at, kind, piece) in edits {
                let at = at.min(text.len());
                match kind {
                    0 => { text.splice(at..at, piece.bytes()); }
                    1 => { let end = (at + piece.len()).min(text.len()); text.drain(at..end); }
                    _ => {
                        let end = (at + piece.len()).min(text.len());
                        text.splice(at..end, piece.bytes());
                    }
                }
            }
            let delta = encode(&base, &text);
            prop_assert_eq!(apply(&base, &delta, u64::MAX).unwrap(), text);
        }

        /// Applying any bytes as a delta never panics: it rebuilds a text or says why not.
        #[test]
        fn any_bytes_applied_never_panic(
            base in proptest::collection::vec(any::<u8>(), 0..300),
            delta in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let _ = apply(&base, &delta, 1 << 20);
        }
    }
}
