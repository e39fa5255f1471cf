//! Where the statements of an SQL text start, so that [`crate::SqlStore::read_only_sql`] can
//! refuse a text that is not exactly one statement: SQLite would silently run only the first one
//! (`SELECT 1; DELETE …` would look like a success), and an empty text gives a driver message
//! nobody understands.
//!
//! This is a lexer, not a parser: it skips what can hide a `;` — string literals, quoted
//! identifiers, comments, and on PostgreSQL dollar-quoted strings and `E'…'` strings with
//! backslash escapes — and splits the rest at `;`. A statement is a piece with anything but
//! white space and comments in it. An unterminated literal or comment runs to the end of the
//! text (the database then reports the syntax error).

use crate::connection::Backend;

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The end (exclusive) of a literal that opens at `start` with `quote` and closes with `close`,
/// where a doubled closing character stands for itself; `backslash`: `\` escapes the next byte.
fn skip_quoted(b: &[u8], start: usize, close: u8, backslash: bool) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == close {
            if b.get(i + 1) == Some(&close) && close != b']' {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// The end of a `/* … */` comment opening at `start` (PostgreSQL nests them, SQLite does not).
fn skip_block_comment(b: &[u8], start: usize, nested: bool) -> usize {
    let mut depth = 1;
    let mut i = start + 2;
    while i < b.len() {
        if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else if nested && b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The end of a PostgreSQL dollar-quoted string opening at `start` (`$$…$$`, `$tag$…$tag$`),
/// or `None` when the `$` there opens none (a parameter such as `$1`).
fn skip_dollar_quoted(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if b.get(i).is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    while i < b.len() && is_ident(b[i]) {
        i += 1;
    }
    if b.get(i) != Some(&b'$') {
        return None;
    }
    let tag = &b[start..=i];
    let body = i + 1;
    Some(
        b[body..]
            .windows(tag.len())
            .position(|w| w == tag)
            .map_or(b.len(), |p| body + p + tag.len()),
    )
}

/// The byte offset where each statement of `sql` starts (its first character that is not
/// white space or a comment).
pub(crate) fn statement_starts(sql: &str, backend: Backend) -> Vec<usize> {
    let pg = backend == Backend::Postgres;
    let b = sql.as_bytes();
    let mut starts = Vec::new();
    let mut in_statement = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b';' {
            in_statement = false;
            i += 1;
            continue;
        }
        if c == b'-' && next == Some(b'-') {
            i = b[i..]
                .iter()
                .position(|x| *x == b'\n')
                .map_or(b.len(), |p| i + p + 1);
            continue;
        }
        if c == b'/' && next == Some(b'*') {
            i = skip_block_comment(b, i, pg);
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if !in_statement {
            starts.push(i);
            in_statement = true;
        }
        i = match c {
            b'\'' => {
                // PostgreSQL's E'…' strings take backslash escapes.
                let escaped = pg
                    && i > 0
                    && matches!(b[i - 1], b'E' | b'e')
                    && (i < 2 || !is_ident(b[i - 2]));
                skip_quoted(b, i, b'\'', escaped)
            }
            b'"' => skip_quoted(b, i, b'"', false),
            b'`' if !pg => skip_quoted(b, i, b'`', false),
            b'[' if !pg => skip_quoted(b, i, b']', false),
            b'$' if pg && (i == 0 || !is_ident(b[i - 1])) => {
                skip_dollar_quoted(b, i).unwrap_or(i + 1)
            }
            _ => i + 1,
        };
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(sql: &str, backend: Backend) -> usize {
        statement_starts(sql, backend).len()
    }

    #[test]
    fn counts_statements_on_both_backends() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            for (sql, n) in [
                ("", 0),
                ("   \n\t", 0),
                (";;", 0),
                ("-- only a comment", 0),
                ("/* a */ -- b\n ;", 0),
                ("SELECT 1", 1),
                ("SELECT 1;", 1),
                ("SELECT 1; ", 1),
                ("SELECT 1; -- done", 1),
                ("SELECT 1; /* done */", 1),
                ("SELECT ';'", 1),
                ("SELECT 'it''s; fine'", 1),
                ("SELECT \"a;b\" FROM t", 1),
                ("SELECT 1 -- ; not a second\n", 1),
                ("SELECT 1 /* ; */", 1),
                ("SELECT 1; DELETE FROM checkpoints", 2),
                ("SELECT 1;DELETE FROM checkpoints;", 2),
                ("SELECT 1; SELECT 2; SELECT 3", 3),
                ("SELECT 'unterminated; DELETE", 1),
            ] {
                assert_eq!(count(sql, backend), n, "{backend}: {sql:?}");
            }
        }
    }

    #[test]
    fn knows_each_backends_quoting() {
        let sqlite = Backend::Sqlite;
        let pg = Backend::Postgres;
        assert_eq!(count("SELECT [a;b] FROM t", sqlite), 1);
        assert_eq!(count("SELECT `a;b` FROM t", sqlite), 1);
        assert_eq!(count("SELECT $$a;b$$", pg), 1);
        assert_eq!(count("SELECT $x$ a; $$ b; $x$", pg), 1);
        assert_eq!(count("SELECT $1; SELECT 2", pg), 2);
        assert_eq!(count("SELECT E'a\\'; b'", pg), 1);
        assert_eq!(count("SELECT 'a\\'; SELECT 2", pg), 2, "no escapes in '…'");
        assert_eq!(count("SELECT 'a\\'; SELECT 2", sqlite), 2);
        assert_eq!(count("SELECT 1 /* /* ; */ ; */", pg), 1, "nested comments");
        assert_eq!(count("SELECT a$b; SELECT 2", pg), 2, "$ inside a name");
    }

    #[test]
    fn starts_are_where_statements_begin() {
        let sql = "  SELECT 1;\n  -- next\n  DELETE FROM t";
        let starts = statement_starts(sql, Backend::Sqlite);
        assert_eq!(starts.len(), 2);
        assert!(sql[starts[1]..].starts_with("DELETE"));
    }
}
