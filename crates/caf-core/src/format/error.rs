//! Errors of the export layer: reading (decoding) and writing (encoding) a checkpoint document.

use super::json::StrictError;

/// One place where a document breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer to the offending value (`""` is the whole document).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at {}: {}",
            display_pointer(&self.pointer),
            plain_violation(&self.message)
        )
    }
}

/// A JSON Schema validator's message in words a user understands: the patterns of the
/// schemas' ids, timestamps, checksums and names said in words, `not` and `anyOf` / `oneOf`
/// spelled out, unknown fields named. Anything else is left as it is.
fn plain_violation(m: &str) -> String {
    // `"id": {"not": {"pattern": "\\.\\."}}`: no `..` in ids.
    if let Some(value) = m.strip_prefix(r#"{"pattern":"\\.\\."} is not allowed for "#) {
        return format!("{value} must not contain \"..\"");
    }
    if let Some((value, pattern)) = m.split_once(" does not match ") {
        let meaning = match pattern {
            r#""^[A-Za-z0-9_:@-][A-Za-z0-9_.:@-]{0,127}$""# => Some(
                "is not a valid id (1 to 128 of A-Z a-z 0-9 _ - . : @, not starting with a dot)",
            ),
            r#""^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$""# => Some(
                "is not a UTC timestamp with microseconds, like \"2026-01-05T10:00:02.257009Z\"",
            ),
            r#""^sha256:[0-9a-f]{64}$""# => {
                Some("is not \"sha256:\" followed by 64 lower-case hex digits")
            }
            r#""^[a-z][a-z0-9_]{0,63}$""# => {
                Some("is not a lower-case name (a letter, then up to 63 of a-z 0-9 _)")
            }
            _ => None,
        };
        if let Some(meaning) = meaning {
            return format!("{value} {meaning}");
        }
    }
    if let Some(value) = m.strip_suffix(r#" is not a "date-time""#) {
        return format!("{value} is not a valid date and time");
    }
    if let Some(value) = m.strip_suffix(" is shorter than 1 character") {
        return format!("{value} must not be empty");
    }
    for keyword in ["anyOf", "oneOf"] {
        let tail =
            format!(" is not valid under any of the schemas listed in the '{keyword}' keyword");
        if let Some(value) = m.strip_suffix(&tail) {
            return format!("{value} is none of the forms allowed here");
        }
    }
    if let Some(rest) = m.strip_prefix("Additional properties are not allowed (") {
        let (names, one) = match rest.strip_suffix(" was unexpected)") {
            Some(n) => (n, true),
            None => (
                rest.strip_suffix(" were unexpected)").unwrap_or(rest),
                false,
            ),
        };
        let names = names.replace('\'', "\"");
        return if one {
            format!("unknown field {names}")
        } else {
            format!("unknown fields {names}")
        };
    }
    m.to_string()
}

/// The violations of one place as one phrase: `"x" is not a valid id (…), and must not contain
/// ".."` (the value is said once when each message starts with it).
fn merged(violations: &[&Violation]) -> String {
    let messages: Vec<String> = violations
        .iter()
        .map(|v| plain_violation(&v.message))
        .collect();
    let Some((first, rest)) = messages.split_first() else {
        return String::new();
    };
    let subject = leading_json_string(first);
    let mut out = first.clone();
    for m in rest {
        match subject.and_then(|s| m.strip_prefix(s)) {
            Some(predicate) => {
                out.push_str(", and");
                out.push_str(predicate);
            }
            None => {
                out.push_str("; ");
                out.push_str(m);
            }
        }
    }
    out
}

/// The JSON string literal a message starts with (`"a \"b\""`), if it starts with one.
fn leading_json_string(m: &str) -> Option<&str> {
    let body = m.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(&m[..i + 2]),
            _ => {}
        }
    }
    None
}

/// The violations grouped by place, in order (they come sorted by pointer): one line each.
fn by_place(violations: &[Violation]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < violations.len() {
        let pointer = &violations[i].pointer;
        let group: Vec<&Violation> = violations[i..]
            .iter()
            .take_while(|v| &v.pointer == pointer)
            .collect();
        i += group.len();
        out.push(format!(
            "at {}: {}",
            display_pointer(pointer),
            merged(&group)
        ));
    }
    out
}

/// A serde message about a value of the wrong kind, in words: `invalid type: floating point
/// `1.0`, expected u64` becomes `1.0 is not a whole number from 0 to 18446744073709551615`.
fn plain_serde(m: &str) -> String {
    const KINDS: [(&str, &str); 8] = [
        ("u64", "a whole number from 0 to 18446744073709551615"),
        ("usize", "a whole number from 0 to 18446744073709551615"),
        ("u32", "a whole number from 0 to 4294967295"),
        ("u16", "a whole number from 0 to 65535"),
        ("u8", "a whole number from 0 to 255"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
        ("f64", "a number"),
    ];
    for (kind, words) in KINDS {
        let Some(found) = m.strip_suffix(&format!(", expected {kind}")) else {
            continue;
        };
        // `invalid type: floating point `1.0``, `invalid value: integer `-1``
        let value = found.split_once('`').and_then(|(_, v)| v.strip_suffix('`'));
        return match value {
            Some(v) => format!("{v} is not {words}"),
            None => format!("{found}, expected {words}"),
        };
    }
    m.to_string()
}

/// Why a document could not be loaded as a checkpoint.
///
/// The caller adds the file name or id (see [`crate::Error::Load`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The document is bigger than [`super::Limits::max_bytes`].
    #[error("file is {size} bytes; the limit is {max} bytes")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// Not well-formed JSON (this covers invalid UTF-8, NUL bytes and trailing garbage).
    #[error(
        "not valid JSON at line {line} column {column} (near {}): {message}",
        display_pointer(pointer)
    )]
    Syntax {
        /// serde_json's description.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Where the reader was.
        pointer: String,
    },
    /// An object repeats a key; JSON readers disagree on which one wins, so caf refuses it.
    #[error("at {}: duplicate key {key:?}", display_pointer(pointer))]
    DuplicateKey {
        /// The object.
        pointer: String,
        /// The key.
        key: String,
    },
    /// Nesting deeper than [`super::Limits::max_depth`].
    #[error(
        "at {}: nesting deeper than {max_depth} levels",
        display_pointer(pointer)
    )]
    TooDeep {
        /// Where the limit was crossed.
        pointer: String,
        /// The limit.
        max_depth: usize,
    },
    /// The document is not an object, or has no string `version`.
    #[error("at /version: missing or not a string; is this a caf checkpoint?")]
    MissingVersion,
    /// `version` is not semver.
    #[error("at /version: {found:?} is not a semantic version")]
    MalformedVersion {
        /// The value found.
        found: String,
    },
    /// A newer major version than this caf supports.
    #[error(
        "format version {found} is newer than the newest this caf supports ({newest}); upgrade caf"
    )]
    NewerVersion {
        /// The file's version.
        found: String,
        /// The newest supported version.
        newest: String,
    },
    /// A version that is not newer, yet unknown.
    #[error("unknown format version {found}; known versions: {known}")]
    UnknownVersion {
        /// The file's version.
        found: String,
        /// The supported versions, comma-separated.
        known: String,
    },
    /// The document breaks the schema of its version.
    #[error("{} (schema {version}){}", by_place(violations).first().cloned().unwrap_or_default(), more(by_place(violations).len()))]
    Schema {
        /// The version whose schema was applied.
        version: String,
        /// Every violation found (at least one).
        violations: Vec<Violation>,
    },
    /// The integrity checksum does not match the content: the file was changed or damaged.
    #[error("at /integrity: checksum mismatch, the file is corrupted or was edited (expected {expected}, content hashes to {actual})")]
    Corrupted {
        /// The checksum stored in the file.
        expected: String,
        /// The checksum of the content.
        actual: String,
    },
    /// The document passed its schema but still is not a valid checkpoint.
    #[error("at {}: {}", display_pointer(pointer), plain_serde(message))]
    Invalid {
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
}

fn display_pointer(p: &str) -> &str {
    if p.is_empty() {
        "/"
    } else {
        p
    }
}

fn more(places: usize) -> String {
    match places {
        0 | 1 => String::new(),
        2 => " (and 1 more problem)".to_string(),
        n => format!(" (and {} more problems)", n - 1),
    }
}

impl LoadError {
    /// Every problem as its own line: one per place (a schema error can have several; the
    /// violations of one place share a line).
    pub fn lines(&self) -> Vec<String> {
        match self {
            Self::Schema {
                version,
                violations,
            } => by_place(violations)
                .into_iter()
                .map(|l| format!("{l} (schema {version})"))
                .collect(),
            other => vec![other.to_string()],
        }
    }
}

impl From<StrictError> for LoadError {
    fn from(e: StrictError) -> Self {
        match e {
            StrictError::Syntax {
                message,
                line,
                column,
                pointer,
            } => Self::Syntax {
                message,
                line,
                column,
                pointer,
            },
            StrictError::DuplicateKey { pointer, key } => Self::DuplicateKey { pointer, key },
            StrictError::TooDeep { pointer, max_depth } => Self::TooDeep { pointer, max_depth },
        }
    }
}

/// Why a checkpoint could not be written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A value the format cannot hold (e.g. a confidence outside 0..=1 or not finite).
    #[error("at {pointer}: {message}")]
    Invalid {
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pointer: &str, message: &str) -> Violation {
        Violation {
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    #[test]
    fn schema_messages_in_words() {
        let id = r#""../x" does not match "^[A-Za-z0-9_:@-][A-Za-z0-9_.:@-]{0,127}$""#;
        let dots = r#"{"pattern":"\\.\\."} is not allowed for "../x""#;
        let e = LoadError::Schema {
            version: "1.0.0".into(),
            violations: vec![
                v("/id", id),
                v("/id", dots),
                v("", r#""snapshot" is a required property"#),
            ],
        };
        assert_eq!(
            e.lines(),
            [
                r#"at /id: "../x" is not a valid id (1 to 128 of A-Z a-z 0-9 _ - . : @, not starting with a dot), and must not contain ".." (schema 1.0.0)"#,
                r#"at /: "snapshot" is a required property (schema 1.0.0)"#,
            ]
        );
        assert!(
            e.to_string()
                .ends_with("(schema 1.0.0) (and 1 more problem)"),
            "{e}"
        );
        assert_eq!(
            plain_violation("Additional properties are not allowed ('a', 'b' were unexpected)"),
            r#"unknown fields "a", "b""#
        );
        assert_eq!(
            plain_violation("Additional properties are not allowed ('x_custom' was unexpected)"),
            r#"unknown field "x_custom""#
        );
        assert_eq!(
            plain_violation(
                "1.5 is not valid under any of the schemas listed in the 'anyOf' keyword"
            ),
            "1.5 is none of the forms allowed here"
        );
        assert_eq!(plain_violation("anything else"), "anything else");
        assert_eq!(leading_json_string(r#""a \" b" is"#), Some(r#""a \" b""#));
        assert_eq!(leading_json_string("1.5 is"), None);
    }

    #[test]
    fn serde_messages_in_words() {
        assert_eq!(
            plain_serde("invalid type: floating point `1.0`, expected u64"),
            "1.0 is not a whole number from 0 to 18446744073709551615"
        );
        assert_eq!(
            plain_serde("invalid value: integer `-1`, expected u32"),
            "-1 is not a whole number from 0 to 4294967295"
        );
        assert_eq!(plain_serde("missing field `id`"), "missing field `id`");
    }
}
