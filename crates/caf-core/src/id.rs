//! Safe identifiers.
//!
//! Checkpoint and execution ids become file names, so they are checked before they are used:
//! 1 to 128 characters from `A-Z a-z 0-9 _ - . : @`, not starting with `.`, and never containing
//! `..`. A path separator, a NUL byte or a `..` component can therefore never reach the file
//! system.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// Why a string is not a valid id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The id is empty.
    #[error("id is empty")]
    Empty,
    /// The id is longer than [`MAX_ID_LEN`].
    #[error("id is {len} bytes long; the limit is {MAX_ID_LEN}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The id holds a character outside the allowed set (this covers `/`, `\` and NUL).
    #[error("id {id:?} contains {ch:?}; ids may only use A-Z a-z 0-9 _ - . : @")]
    BadChar {
        /// The id, shortened for display.
        id: String,
        /// The first offending character.
        ch: char,
    },
    /// The id starts with `.` or contains `..`.
    #[error("id {id:?} starts with '.' or contains '..'")]
    Dots {
        /// The id.
        id: String,
    },
}

/// Checks that `s` is a valid id (see the module documentation).
pub fn check_id(s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    if s.len() > MAX_ID_LEN {
        return Err(IdError::TooLong { len: s.len() });
    }
    if let Some(ch) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '@')))
    {
        return Err(IdError::BadChar {
            id: s.chars().take(40).collect(),
            ch,
        });
    }
    if s.starts_with('.') || s.contains("..") {
        return Err(IdError::Dots { id: s.to_string() });
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Checks `s` and wraps it.
            pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
                let s = s.into();
                check_id(&s)?;
                Ok(Self(s))
            }

            /// A new time-ordered id: the prefix followed by a UUIDv7.
            pub fn generate() -> Self {
                Self(format!("{}{}", $prefix, uuid::Uuid::now_v7()))
            }

            /// The id as a string.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// The id of one checkpoint, e.g. `ckpt_0193…` (a UUIDv7, so ids sort by creation time).
    CheckpointId,
    "ckpt_"
);
id_type!(
    /// The id of one execution (one run of an agent on a task), e.g. `exec_0193…`.
    ExecutionId,
    "exec_"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids() {
        for ok in ["ckpt_abc123", "exec-1", "a", "agent@host:1", "v1.2.3"] {
            assert_eq!(check_id(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_paths_and_dots() {
        for bad in [
            "", "../x", "a/b", "a\\b", "..", ".hidden", "a..b", "nul\0", "é", " x",
        ] {
            assert!(check_id(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(check_id(&"x".repeat(MAX_ID_LEN)).is_ok());
        assert_eq!(
            check_id(&"x".repeat(MAX_ID_LEN + 1)),
            Err(IdError::TooLong {
                len: MAX_ID_LEN + 1
            })
        );
    }

    #[test]
    fn generated_ids_are_valid_and_ordered() {
        let a = CheckpointId::generate();
        let b = CheckpointId::generate();
        assert!(a.as_str().starts_with("ckpt_"));
        assert!(check_id(a.as_str()).is_ok());
        assert!(a < b);
    }

    #[test]
    fn deserialization_checks_ids() {
        assert!(serde_json::from_str::<CheckpointId>("\"../etc\"").is_err());
        let id: ExecutionId = serde_json::from_str("\"exec_1\"").unwrap();
        assert_eq!(id.as_str(), "exec_1");
    }
}
