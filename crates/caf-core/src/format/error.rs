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
        let p = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "at {p}: {}", self.message)
    }
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
    #[error("{} (schema {version}){}", violations.first().map(|v| v.to_string()).unwrap_or_default(), more(violations.len()))]
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
    #[error("at {}: {message}", display_pointer(pointer))]
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

fn more(n: usize) -> String {
    match n {
        0 | 1 => String::new(),
        2 => " (and 1 more problem)".to_string(),
        n => format!(" (and {} more problems)", n - 1),
    }
}

impl LoadError {
    /// Every problem as its own line (schema errors can have many).
    pub fn lines(&self) -> Vec<String> {
        match self {
            Self::Schema {
                version,
                violations,
            } => violations
                .iter()
                .map(|v| format!("{v} (schema {version})"))
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
