//! How values become columns: the query form of a string, counters and positions as `BIGINT`,
//! JSON text.
//!
//! Query columns may be lossy (a NUL character becomes U+FFFD, a counter above `i64::MAX`
//! saturates); what they cannot hold exactly is kept elsewhere (payloads, the `exact` column), so
//! that a checkpoint always loads back equal to what was saved.

use serde::Serialize;
use std::borrow::Cow;

/// The query form of a string: NUL replaced by U+FFFD (PostgreSQL `text` cannot hold NUL).
pub(crate) fn text(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', "\u{fffd}"))
    } else {
        Cow::Borrowed(s)
    }
}

/// Whether a filter value may match a string whose query form differs from it.
pub(crate) fn is_ambiguous(s: &str) -> bool {
    s.contains('\0') || s.contains('\u{fffd}')
}

/// A counter as a column: saturated at `i64::MAX`.
pub(crate) fn int(u: u64) -> i64 {
    i64::try_from(u).unwrap_or(i64::MAX)
}

/// A count or position as a column.
pub(crate) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A column counter back as `u64` (negative values, which caf never writes, become 0).
pub(crate) fn uint(i: i64) -> u64 {
    u64::try_from(i).unwrap_or(0)
}

/// JSON text of a value the caf types produced (serializing them into memory cannot fail).
pub(crate) fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_string())
}
