//! Line diffs of long strings, via `similar`.

use similar::TextDiff;
use std::time::Duration;

/// A string with at least this many lines gets a line diff when it changes.
pub const TEXT_DIFF_MIN_LINES: usize = 3;

/// How long one line diff may search for the smallest edit before it settles for a larger one.
/// Keeps a hostile pair of huge strings from making `diff` slow.
const TIMEOUT: Duration = Duration::from_millis(100);

/// The number of lines of `s` (a trailing newline does not start another line).
fn line_count(s: &str) -> usize {
    let n = s.bytes().filter(|&b| b == b'\n').count();
    if s.ends_with('\n') {
        n
    } else {
        n + 1
    }
}

/// Whether a change from `old` to `new` deserves a line diff.
pub fn is_long(old: &str, new: &str) -> bool {
    line_count(old) >= TEXT_DIFF_MIN_LINES || line_count(new) >= TEXT_DIFF_MIN_LINES
}

/// A unified diff (`--- old`, `+++ new`, `@@` hunks, 3 lines of context) of `old` → `new`,
/// or `None` if either is shorter than [`TEXT_DIFF_MIN_LINES`] lines or they are equal.
pub fn unified(old: &str, new: &str) -> Option<String> {
    if old == new || !is_long(old, new) {
        return None;
    }
    let diff = TextDiff::configure().timeout(TIMEOUT).diff_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("old", "new")
        .to_string();
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_get_no_line_diff() {
        assert_eq!(unified("a", "b"), None);
        assert_eq!(unified("a\nb", "a\nc"), None);
        assert_eq!(unified("a\nb\nc", "a\nb\nc"), None);
    }

    #[test]
    fn long_strings_get_a_unified_diff() {
        let d = unified("one\ntwo\nthree\n", "one\n2\nthree\n").unwrap_or_default();
        assert!(d.starts_with("--- old\n+++ new\n"), "{d}");
        assert!(d.contains("@@ -1,3 +1,3 @@"), "{d}");
        assert!(d.contains("-two\n+2\n"), "{d}");
    }

    #[test]
    fn counts_lines() {
        assert_eq!(line_count(""), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("a\nb\nc"), 3);
    }
}
