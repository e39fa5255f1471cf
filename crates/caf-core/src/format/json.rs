//! A strict JSON reader: like `serde_json::from_slice::<Value>`, but it refuses duplicate keys
//! and nesting deeper than a limit, and reports where (a JSON Pointer) it stopped.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// Why strict parsing failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrictError {
    /// Not JSON (or not UTF-8, or trailing data): serde_json's message and position.
    Syntax {
        /// serde_json's message, without the position.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Where in the document the reader was.
        pointer: String,
    },
    /// An object has the same key twice.
    DuplicateKey {
        /// The object holding the key.
        pointer: String,
        /// The repeated key.
        key: String,
    },
    /// Nesting goes deeper than allowed.
    TooDeep {
        /// Where the limit was crossed.
        pointer: String,
        /// The limit.
        max_depth: usize,
    },
}

enum Stop {
    Duplicate(String),
    TooDeep,
}

/// Parser state. The path to an error is collected while the error unwinds (each container
/// adds its segment), so the happy path does no bookkeeping.
struct State {
    stop: Option<Stop>,
    unwind: Vec<String>,
    max_depth: usize,
}

/// Formats path segments as a JSON Pointer (RFC 6901): `""` for the root.
pub fn pointer_of<S: AsRef<str>>(path: &[S]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push('/');
        out.push_str(&seg.as_ref().replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// A serde path (`snapshot.tool_state.calls[3].duration_ms`) as a JSON Pointer
/// ([`pointer_of`] of its segments; an enum variant is a segment too).
pub fn path_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let segments: Vec<String> = path
        .iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(index.to_string()),
            Segment::Map { key } => Some(key.clone()),
            Segment::Enum { variant } => Some(variant.clone()),
            Segment::Unknown => None,
        })
        .collect();
    pointer_of(&segments)
}

/// Builds a `Value` like serde_json's own visitor, refusing a repeated key and nesting deeper
/// than the state's limit. Also the reader behind [`super::unique_keys`], without a limit.
#[derive(Clone, Copy)]
pub(super) struct Seed<'a> {
    state: &'a RefCell<State>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// Runs `f` with a seed that refuses duplicate keys but sets no depth limit (serde_json's own
/// recursion limit still applies when reading text).
pub(super) fn with_unlimited_seed<R>(f: impl FnOnce(Seed<'_>) -> R) -> R {
    let state = RefCell::new(State {
        stop: None,
        unwind: Vec::new(),
        max_depth: usize::MAX,
    });
    f(Seed {
        state: &state,
        depth: 0,
    })
}

impl Seed<'_> {
    /// Reads the members of an object (the caller has entered it), refusing a repeated key.
    pub(super) fn object<'de, A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<Map<String, Value>, A::Error> {
        let inner = self.enter()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match out.entry(key) {
                Entry::Occupied(o) => {
                    let key = o.key().clone();
                    let err = de::Error::custom(format_args!("duplicate key {key:?}"));
                    self.state.borrow_mut().stop = Some(Stop::Duplicate(key));
                    return Err(err);
                }
                Entry::Vacant(e) => {
                    let v = map.next_value_seed(inner);
                    let v = self.unwinding(v, || e.key().clone())?;
                    e.insert(v);
                }
            }
        }
        Ok(out)
    }

    fn enter<E: de::Error>(self) -> Result<Self, E> {
        let depth = self.depth + 1;
        let mut st = self.state.borrow_mut();
        if depth > st.max_depth {
            st.stop = Some(Stop::TooDeep);
            return Err(E::custom("nesting too deep"));
        }
        Ok(Seed {
            state: self.state,
            depth,
        })
    }

    fn unwinding<T, E>(self, r: Result<T, E>, segment: impl FnOnce() -> String) -> Result<T, E> {
        if r.is_err() {
            self.state.borrow_mut().unwind.push(segment());
        }
        r
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut out = Vec::new();
        loop {
            let next = seq.next_element_seed(inner);
            match self.unwinding(next, || out.len().to_string())? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        self.object(map).map(Value::Object)
    }
}

/// Parses `bytes` as one JSON document, refusing duplicate keys and nesting deeper than
/// `max_depth` (arrays and objects count one level each).
pub fn parse_strict(bytes: &[u8], max_depth: usize) -> Result<Value, StrictError> {
    let state = RefCell::new(State {
        stop: None,
        unwind: Vec::new(),
        max_depth,
    });
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = Seed {
        state: &state,
        depth: 0,
    };
    let result = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match result {
        Ok(v) => Ok(v),
        Err(e) => {
            let st = state.into_inner();
            let mut path = st.unwind;
            path.reverse();
            let pointer = pointer_of(&path);
            Err(match st.stop {
                Some(Stop::Duplicate(key)) => StrictError::DuplicateKey { pointer, key },
                Some(Stop::TooDeep) => StrictError::TooDeep { pointer, max_depth },
                None => {
                    let full = e.to_string();
                    let message = full
                        .rsplit_once(" at line ")
                        .map_or(full.as_str(), |(m, _)| m);
                    StrictError::Syntax {
                        message: plain_syntax(bytes, message),
                        line: e.line(),
                        column: e.column(),
                        pointer,
                    }
                }
            })
        }
    }
}

/// serde_json's description of a syntax error, in words a user understands; the whole file
/// is looked at for what a parser cannot see (empty, a byte order mark, UTF-16, NUL bytes).
fn plain_syntax(bytes: &[u8], message: &str) -> String {
    let whole = if bytes.is_empty() {
        Some("the file is empty")
    } else if bytes.iter().all(u8::is_ascii_whitespace) {
        Some("the file holds only white space, no JSON")
    } else if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        Some("the file starts with a UTF-8 byte order mark (BOM), which JSON does not allow: remove its first 3 bytes")
    } else if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        Some("the file is UTF-16 (it starts with a byte order mark); checkpoints are UTF-8 JSON")
    } else if bytes[0] == 0 {
        Some("the file starts with NUL bytes, not JSON text")
    } else {
        None
    };
    if let Some(w) = whole {
        return w.to_string();
    }
    let said = match message {
        "EOF while parsing a value" => {
            "the file ends where a value should be (EOF): is it truncated?"
        }
        "EOF while parsing an object" => "the file ends inside an object (EOF): is it truncated?",
        "EOF while parsing a list" => "the file ends inside an array (EOF): is it truncated?",
        "EOF while parsing a string" => "the file ends inside a string (EOF): is it truncated?",
        "expected value" => {
            "expected a JSON value here (NaN, Infinity, comments and unquoted words are not JSON)"
        }
        "key must be a string" => {
            "expected a key in double quotes (JSON has no comments and no single quotes)"
        }
        "trailing characters" => "trailing characters after the JSON document",
        "trailing comma" => "trailing comma before a closing bracket (not allowed in JSON)",
        "control character (\\u0000-\\u001F) found while parsing a string" => {
            "a raw control character inside a string (write it escaped, like \\n or \\u0009)"
        }
        "invalid unicode code point" => {
            "bytes that are not UTF-8 inside a string (checkpoints are UTF-8)"
        }
        "unexpected end of hex escape" => {
            "an incomplete \\u escape inside a string (a lone surrogate?)"
        }
        "number out of range" => "number out of range (too large for a 64-bit float)",
        other => other,
    };
    said.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_serde_json() {
        let src = br#"{"a": [1, -2, 3.5, "x", null, true], "b": {"c": {}}}"#;
        let strict = parse_strict(src, 64).unwrap();
        let plain: Value = serde_json::from_slice(src).unwrap();
        assert_eq!(strict, plain);
    }

    #[test]
    fn refuses_duplicate_keys_with_pointer() {
        let err = parse_strict(br#"{"a": {"b": 1, "b": 2}}"#, 64).unwrap_err();
        assert_eq!(
            err,
            StrictError::DuplicateKey {
                pointer: "/a".into(),
                key: "b".into()
            }
        );
    }

    #[test]
    fn refuses_deep_nesting() {
        let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
        match parse_strict(deep.as_bytes(), 64) {
            Err(StrictError::TooDeep {
                max_depth: 64,
                pointer,
            }) => {
                assert!(pointer.starts_with("/0/0/0"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(parse_strict(b"[[[]]]", 3).is_ok());
        assert!(parse_strict(b"[[[[]]]]", 3).is_err());
    }

    #[test]
    fn reports_syntax_errors_with_position() {
        match parse_strict(b"{\"a\": [1, 2,\n  }", 64) {
            Err(StrictError::Syntax { line, pointer, .. }) => {
                assert_eq!(line, 2);
                assert_eq!(pointer, "/a/2");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            parse_strict(b"{} trailing", 64),
            Err(StrictError::Syntax { .. })
        ));
        assert!(matches!(
            parse_strict(b"\"\xff\"", 64),
            Err(StrictError::Syntax { .. })
        ));
    }

    #[test]
    fn says_syntax_errors_in_words() {
        let said = |bytes: &[u8]| match parse_strict(bytes, 64) {
            Err(StrictError::Syntax { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(said(b""), "the file is empty");
        assert_eq!(said(b" \n\t "), "the file holds only white space, no JSON");
        assert!(said(b"\xEF\xBB\xBF{}").contains("byte order mark (BOM)"));
        assert!(said(b"\xFF\xFE{\x00}\x00").contains("UTF-16"));
        assert!(said(b"\x00\x00").contains("NUL bytes"));
        assert!(said(b"{\"a\": NaN}").starts_with("expected a JSON value here"));
        assert!(said(b"{\"a\": [1").contains("(EOF)"));
        assert!(said(b"{} x").starts_with("trailing characters"));
    }

    #[test]
    fn escapes_pointer_segments() {
        assert_eq!(pointer_of(&["a/b", "c~d"]), "/a~1b/c~0d");
        assert_eq!(pointer_of::<&str>(&[]), "");
    }
}
