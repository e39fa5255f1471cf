//! How the journal found a text delta (`super`), when it journaled saves as text deltas
//! before revisions ([`crate::journal_revision`]): kept to make the records that the tests of
//! reading such a journal read back.

use super::{COPY, INSERT};

/// Equal runs shorter than this are written as text (a copy takes 9 bytes).
const MIN_COPY: usize = 64;
/// How many lines of each text are looked at for where they meet again after they part.
const LOOK_LINES: usize = 48;
/// How many line starts of each text are searched for further on in the other, failing that.
const FAR_ANCHORS: usize = 8;
/// Those searches scan at most this many times both texts' length in all: texts that part
/// and never meet again nearby would otherwise cost time in the square of their length.
const FAR_SCANS: usize = 4;

/// The delta that rebuilds `text` from `base`, or `None` when it would not be less than half
/// the text's size, when finding it would scan the texts more than [`FAR_SCANS`] times over,
/// or when the text is too long for the layout.
pub(crate) fn encode(base: &[u8], text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    encode_into(base, text, &mut out).then_some(out)
}

/// Appends to `out` the delta that rebuilds `text` from `base` (see `encode`): whether it did;
/// when not, what it appended is to be dropped.
pub(crate) fn encode_into(base: &[u8], text: &[u8], out: &mut Vec<u8>) -> bool {
    let (Ok(len), Ok(_)) = (u32::try_from(text.len()), u32::try_from(base.len())) else {
        return false;
    };
    // The most the delta may take: less than half the text.
    let budget = out.len() + text.len() / 2;
    let mut scans = FAR_SCANS * (text.len() + base.len());
    out.reserve(4096);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(text).to_le_bytes());
    let (mut i, mut j) = (0, 0);
    // Text not yet written: from here to `i`.
    let mut pending = 0;
    while i < text.len() {
        let run = common_len(&text[i..], &base[j.min(base.len())..]);
        if run >= MIN_COPY {
            // End the copy at a line start, so that finding where the texts meet again starts
            // at whole lines (unless it reaches the end).
            let end = if i + run == text.len() {
                run
            } else {
                match text[i..i + run].iter().rposition(|b| *b == b'\n') {
                    Some(nl) if nl + 1 >= MIN_COPY => nl + 1,
                    _ => run,
                }
            };
            insert(out, &text[pending..i]);
            copy(out, j, end);
            i += end;
            j += end;
            pending = i;
            if out.len() > budget {
                return false;
            }
            continue;
        }
        match meet(text, i, base, j, &mut scans) {
            Some(Some((a, b))) => {
                i = a;
                j = b;
            }
            Some(None) => i = text.len(),
            None => return false,
        }
    }
    insert(out, &text[pending..]);
    out.len() < budget
}

fn insert(out: &mut Vec<u8>, text: &[u8]) {
    if text.is_empty() {
        return;
    }
    out.push(INSERT);
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text);
}

fn copy(out: &mut Vec<u8>, from: usize, n: usize) {
    out.push(COPY);
    out.extend_from_slice(&(from as u32).to_le_bytes());
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

/// How many bytes `a` and `b` have in common from their start.
fn common_len(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 256;
    let n = a.len().min(b.len());
    // Word by word at first (most comparisons of lines that differ end there), then in chunks.
    let word = |k: usize| -> u64 {
        let (x, y) = (&a[k..k + 8], &b[k..k + 8]);
        u64::from_le_bytes(x.try_into().unwrap_or_default())
            ^ u64::from_le_bytes(y.try_into().unwrap_or_default())
    };
    let mut k = 0;
    while k + 8 <= n && k < CHUNK {
        match word(k) {
            0 => k += 8,
            x => return k + (x.trailing_zeros() / 8) as usize,
        }
    }
    while k + CHUNK <= n && a[k..k + CHUNK] == b[k..k + CHUNK] {
        k += CHUNK;
    }
    while k + 8 <= n {
        match word(k) {
            0 => k += 8,
            x => return k + (x.trailing_zeros() / 8) as usize,
        }
    }
    while k < n && a[k] == b[k] {
        k += 1;
    }
    k
}

/// The starts of the lines of a text from a position on (that position first), found as they
/// are asked for.
struct Lines<'a> {
    text: &'a [u8],
    starts: [usize; LOOK_LINES + 1],
    found: usize,
    /// No line starts after the last one found.
    ended: bool,
}

impl<'a> Lines<'a> {
    fn from(text: &'a [u8], at: usize) -> Self {
        let mut starts = [0; LOOK_LINES + 1];
        starts[0] = at;
        Self {
            text,
            starts,
            found: usize::from(at < text.len()),
            ended: at >= text.len(),
        }
    }

    /// The start of line `k` (0 is the position given), if there is one.
    fn start(&mut self, k: usize) -> Option<usize> {
        while self.found <= k && !self.ended && self.found < self.starts.len() {
            let last = self.starts[self.found - 1];
            match memchr::memchr(b'\n', &self.text[last..]) {
                Some(nl) if last + nl + 1 < self.text.len() => {
                    self.starts[self.found] = last + nl + 1;
                    self.found += 1;
                }
                _ => self.ended = true,
            }
        }
        (k < self.found).then(|| self.starts[k])
    }

    /// The length of line `k` (found, as is the next one if there is one), its newline
    /// included (to the end of the text for the last).
    fn len(&self, k: usize) -> usize {
        let next = if k + 1 < self.found {
            self.starts[k + 1]
        } else {
            self.text.len()
        };
        next - self.starts[k]
    }
}

/// Where `text` (from `i`) and `base` (from `j`) meet again, where they differ: the nearest
/// pair of line starts from which at least [`MIN_COPY`] bytes are equal, nearest meaning the
/// fewest lines passed over in both; failing that, one of the next lines of either found
/// further on in the other; `None` when those searches would pass the bytes `scans` has left.
fn meet(
    text: &[u8],
    i: usize,
    base: &[u8],
    j: usize,
    scans: &mut usize,
) -> Option<Option<(usize, usize)>> {
    let mut ours = Lines::from(text, i);
    let mut theirs = Lines::from(base, j);
    if ours.start(0).is_none() || theirs.start(0).is_none() {
        return Some(None);
    }
    for d in 1..2 * LOOK_LINES - 1 {
        // The lines there are up to `d` past the start, in each (and where the next starts).
        let top = d.min(LOOK_LINES - 1);
        ours.start(top + 1);
        theirs.start(top + 1);
        let (a_max, b_max) = (top.min(ours.found - 1), top.min(theirs.found - 1));
        if d > a_max + b_max {
            break;
        }
        // Every pair of lines passed over that adds up to `d`, fewest in `text` first.
        for a in d - b_max..=a_max {
            let b = d - a;
            let (x, y) = (ours.starts[a], theirs.starts[b]);
            // Lines shorter than a copy must be equal whole: of one length.
            let (lx, ly) = (ours.len(a), theirs.len(b));
            if (lx < MIN_COPY || ly < MIN_COPY) && lx != ly {
                continue;
            }
            if common_len(&text[x..], &base[y..]) >= MIN_COPY {
                return Some(Some((x, y)));
            }
        }
    }
    // Further on: a large insertion (in `text`) or removal (from `base`).
    let mut find = |key: &[u8], hay: &[u8]| {
        *scans = scans.checked_sub(hay.len())?;
        Some(memchr::memmem::find(hay, key))
    };
    for a in 0..FAR_ANCHORS {
        let Some(x) = ours.start(a) else { break };
        if let Some(key) = text.get(x..x + MIN_COPY) {
            if let Some(at) = find(key, &base[j..])? {
                return Some(Some((x, j + at)));
            }
        }
    }
    for b in 0..FAR_ANCHORS {
        let Some(y) = theirs.start(b) else { break };
        if let Some(key) = base.get(y..y + MIN_COPY) {
            if let Some(at) = find(key, &text[i..])? {
                return Some(Some((i + at, y)));
            }
        }
    }
    Some(None)
}
