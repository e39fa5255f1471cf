//! Presentation: colours (off when not a TTY or when NO_COLOR is set — anstream decides), tables,
//! human-readable sizes and times, JSON.

use anstyle::{AnsiColor, Style};
use std::io::Write;

/// Bold.
pub const BOLD: Style = Style::new().bold();
/// Dimmed, for secondary text.
pub const DIM: Style = Style::new().dimmed();
/// Green, for success and additions.
pub const GREEN: Style = AnsiColor::Green.on_default();
/// Red, for failures and removals.
pub const RED: Style = AnsiColor::Red.on_default();
/// Yellow, for warnings and changes.
pub const YELLOW: Style = AnsiColor::Yellow.on_default();
/// Cyan, for ids.
pub const CYAN: Style = AnsiColor::Cyan.on_default();

/// Prints a line on stdout; a closed pipe (`caf … | head`) is not an error worth a panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::output::note_stdout(writeln!(std::io::stdout(), $($arg)*));
    }};
}

/// The first error writing to stdout (other than a closed pipe, which only means the reader
/// has seen enough): the command then fails, since its output was lost.
static STDOUT_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Notes the outcome of a write to stdout.
pub fn note_stdout(r: std::io::Result<()>) {
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = STDOUT_FAILED.set(e.to_string());
        }
    }
}

/// Flushes stdout; the first write error of the command, if any.
pub fn stdout_failure() -> Option<String> {
    note_stdout(std::io::stdout().flush());
    STDOUT_FAILED.get().cloned()
}

/// One line: a message from a library (a database driver, say) may hold line breaks.
fn one_line(msg: &str) -> String {
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Prints one error line on stderr: `error: …`.
pub fn error_line(msg: &str) {
    let mut err = anstream::stderr();
    let red = RED.bold();
    let _ = writeln!(err, "{red}error:{red:#} {}", one_line(msg));
}

/// Prints one warning line on stderr.
pub fn warn_line(msg: &str) {
    let mut err = anstream::stderr();
    let _ = writeln!(err, "{YELLOW}warning:{YELLOW:#} {}", one_line(msg));
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json(v: &impl serde::Serialize) {
    let mut out = std::io::stdout().lock();
    // Serialising our own plain types cannot fail; a write error is noted (see `note_stdout`).
    note_stdout(
        serde_json::to_writer_pretty(&mut out, v)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out)),
    );
}

/// `1 checkpoint`, `2 checkpoints`: a count and its noun (regular plurals only).
pub fn count(n: impl Into<u64>, noun: &str) -> String {
    let n: u64 = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// [`count`] of a `usize`.
pub fn count_of(n: usize, noun: &str) -> String {
    count(n as u64, noun)
}

/// `1.5 KiB`-style sizes.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `1h 30m`-style durations (seed 003's formatDuration).
pub fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{}.{}s", s, (ms % 1000) / 100),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// `3h ago`-style ages.
pub fn age(t: caf_core::Timestamp) -> String {
    let secs = (chrono::Utc::now() - t.as_datetime()).num_seconds();
    match secs {
        i64::MIN..=-1 => "in the future".into(),
        0..=59 => format!("{secs}s ago"),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// A short human time: `2026-11-22 01:40:31`.
pub fn short_time(t: caf_core::Timestamp) -> String {
    t.as_datetime().format("%Y-%m-%d %H:%M:%S").to_string()
}

/// Shortens `s` to at most `max` characters on one line, with an ellipsis.
pub fn clip(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// A plain text table: a bold header and left-aligned columns.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<(String, Style)>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row of styled cells.
    pub fn row(&mut self, cells: Vec<(String, Style)>) {
        self.rows.push(cells);
    }

    /// Prints the table on stdout.
    pub fn print(&self) {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, (c, _)) in r.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(c.chars().count());
                }
            }
        }
        let mut out = anstream::stdout();
        let last = widths.len().saturating_sub(1);
        let mut line = String::new();
        for (i, h) in self.header.iter().enumerate() {
            let pad = if i == last {
                0
            } else {
                widths[i] - h.chars().count() + 2
            };
            line.push_str(&format!("{BOLD}{h}{BOLD:#}{}", " ".repeat(pad)));
        }
        let _ = writeln!(out, "{}", line.trim_end());
        for r in &self.rows {
            let mut line = String::new();
            for (i, (c, style)) in r.iter().enumerate() {
                let pad = if i == last {
                    0
                } else {
                    widths[i] - c.chars().count() + 2
                };
                line.push_str(&format!("{style}{c}{style:#}{}", " ".repeat(pad)));
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humanises() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(duration_ms(5400000), "1h 30m");
        assert_eq!(duration_ms(90000), "1m 30s");
        assert_eq!(duration_ms(5000), "5.0s");
        assert_eq!(duration_ms(20), "20ms");
        assert_eq!(clip("a\nb  c", 10), "a b c");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(count(1u64, "row"), "1 row");
        assert_eq!(count(0u64, "row"), "0 rows");
        assert_eq!(count_of(2, "tool call"), "2 tool calls");
    }
}
