//! [`RedactionRules`]: what counts as a secret, and how a string or a JSON value is redacted.
//!
//! Three kinds of rule, each with a *kind* (a snake_case word) that names it in the marker
//! `[REDACTED:kind]` and in opt-outs:
//!
//! - **token shapes** found anywhere in a string ([`BUILT_IN_PATTERNS`]: OpenAI- and
//!   Anthropic-style `sk-…` keys, GitHub tokens, AWS access key ids, Slack tokens, JWTs,
//!   `Bearer …` credentials, private-key blocks), plus the user's own patterns;
//! - **sensitive keys**: in a JSON object, the value under a key whose last words are
//!   `password`, `secret`, `token`, `api_key`, … ([`BUILT_IN_KEYS`]) is replaced whole, whatever
//!   its shape (a string, a number, an object); `null`, booleans, empty strings and values that
//!   are already a marker are left alone. Keys are compared by words, so `apiKey`, `API-KEY`,
//!   `openai_api_key` and `x-api-key` all end with `api_key`, while `tokens_used` and
//!   `max_tokens` do not end with `token`;
//! - **opt-outs**: `allow_key` keeps the value under a key exactly as it is (nothing inside it is
//!   looked at), `allow_pattern` turns a rule off by its kind.
//!
//! Redaction is idempotent: a marker matches no built-in rule, and text inside a marker is
//! never redacted again, so redacting twice changes nothing the second time.

use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// How every marker starts: `[REDACTED:kind]`.
pub const MARKER_PREFIX: &str = "[REDACTED:";

/// The built-in token shapes, as `(kind, regular expression)`, in the order they are tried.
pub const BUILT_IN_PATTERNS: &[(&str, &str)] = &[
    (
        "private_key",
        r"(?s:-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\z))",
    ),
    ("anthropic_key", r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai_key",
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    ),
    (
        "github_token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    (
        "aws_access_key",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b)",
    ),
    ("slack_token", r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}"),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
    ),
    (
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    ),
    (
        "bearer_token",
        r"(?-u:\b)[Bb]earer [A-Za-z0-9._~+/-]{20,}=*",
    ),
];

/// The built-in sensitive keys: `(kind, the key's last words)`.
pub const BUILT_IN_KEYS: &[(&str, &[&str])] = &[
    ("password", &["password"]),
    ("password", &["passwd"]),
    ("password", &["pwd"]),
    ("passphrase", &["passphrase"]),
    ("secret", &["secret"]),
    ("token", &["token"]),
    ("api_key", &["api", "key"]),
    ("api_key", &["apikey"]),
    ("access_key", &["access", "key"]),
    ("private_key", &["private", "key"]),
    ("secret_key", &["secret", "key"]),
    ("authorization", &["authorization"]),
    ("credentials", &["credentials"]),
    ("credentials", &["credential"]),
    ("cookie", &["cookie"]),
];

/// Why a rule could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedactionError {
    /// A pattern's kind is not a snake_case word.
    #[error("redaction pattern kind {kind:?} is not a snake_case word (a-z, 0-9, _)")]
    BadKind {
        /// The kind given.
        kind: String,
    },
    /// A pattern is not a valid regular expression.
    #[error(
        "redaction pattern {kind:?} is not a valid regular expression: {}",
        one_line(source)
    )]
    BadPattern {
        /// The pattern's kind.
        kind: String,
        /// The regex crate's error (it quotes the pattern and points at the fault).
        #[source]
        source: Box<regex::Error>,
    },
    /// A pattern matches the empty string, so it would redact between every character.
    #[error("redaction pattern {kind:?} matches the empty string")]
    EmptyMatch {
        /// The pattern's kind.
        kind: String,
    },
    /// An opt-out names a pattern kind that no rule has.
    #[error("allow_patterns: no redaction pattern of kind {kind:?} (known: {known})")]
    UnknownKind {
        /// The kind given.
        kind: String,
        /// The known pattern kinds, comma-separated.
        known: String,
    },
    /// The patterns together make an expression too large to compile.
    #[error("redaction patterns together are too large: {}", one_line(source))]
    TooLarge {
        /// The regex crate's error.
        #[source]
        source: Box<regex::Error>,
    },
    /// A key is empty (it has no words).
    #[error("redaction key {key:?} has no letters or digits")]
    EmptyKey {
        /// The key given.
        key: String,
    },
}

/// The regex crate's error (which spreads over several lines, pointing at the fault) on one
/// line.
fn one_line(e: &regex::Error) -> String {
    e.to_string()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// One pattern rule.
#[derive(Debug, Clone)]
struct Pattern {
    kind: String,
    source: String,
    /// The pattern anchored at both ends, to tell which rule produced a match.
    whole: Regex,
}

/// One sensitive-key rule: keys whose last words are `words`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyRule {
    kind: String,
    words: Vec<String>,
}

/// What counts as a secret (see the module docs). The default holds every built-in rule.
#[derive(Debug, Clone)]
pub struct RedactionRules {
    enabled: bool,
    patterns: Vec<Pattern>,
    allowed_patterns: BTreeSet<String>,
    /// Every pattern not allowed, as one alternation (`None` when there is none).
    combined: Option<Regex>,
    /// A marker, to skip text already redacted.
    marker: Regex,
    keys: Vec<KeyRule>,
    allowed_keys: BTreeSet<Vec<String>>,
    /// The last word of every key rule, to dismiss most keys without splitting them.
    last_words: BTreeSet<String>,
}

impl Default for RedactionRules {
    /// Every built-in rule. They are compiled once per process; each default is a cheap copy
    /// (the compiled expressions are shared).
    fn default() -> Self {
        static BUILT_IN: std::sync::OnceLock<RedactionRules> = std::sync::OnceLock::new();
        BUILT_IN.get_or_init(Self::built_in).clone()
    }
}

impl RedactionRules {
    /// Compiles every built-in rule.
    fn built_in() -> Self {
        let mut rules = Self {
            enabled: true,
            patterns: Vec::new(),
            allowed_patterns: BTreeSet::new(),
            combined: None,
            marker: compile(r"\[REDACTED:[a-z][a-z0-9_]*\]"),
            keys: Vec::new(),
            allowed_keys: BTreeSet::new(),
            last_words: BTreeSet::new(),
        };
        for (kind, source) in BUILT_IN_PATTERNS {
            rules.patterns.push(Pattern {
                kind: (*kind).to_string(),
                source: (*source).to_string(),
                whole: compile(&format!("^(?:{source})$")),
            });
        }
        for (kind, words) in BUILT_IN_KEYS {
            rules.keys.push(KeyRule {
                kind: (*kind).to_string(),
                words: words.iter().map(|w| (*w).to_string()).collect(),
            });
        }
        rules.combined = Some(compile(&rules.alternation()));
        rules.last_words = rules.key_last_words();
        rules
    }
}

/// Compiles one of caf's own expressions, which are tested to compile.
fn compile(source: &str) -> Regex {
    match Regex::new(source) {
        Ok(r) => r,
        // Unreachable: the built-in expressions compile (`built_in_rules_compile` tests it).
        Err(e) => panic!("built-in redaction pattern does not compile: {e}"),
    }
}

/// Whether `s` is a marker kind: a snake_case word.
fn is_kind(s: &str) -> bool {
    crate::format::is_snake_word(s)
}

/// The words of a key, lower case: split at `_`, `-`, `.`, spaces and other punctuation, and at
/// camelCase boundaries (`apiKey` → `api key`, `APIKey` → `api key`).
pub fn key_words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c.is_uppercase() && !current.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut current));
            }
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// What the rules say of an object key.
enum KeyVerdict<'r> {
    /// Nothing special: look inside the value.
    Plain,
    /// Keep the value as it is (an opt-out).
    Allowed,
    /// Replace the value, as this kind.
    Sensitive(&'r str),
}

impl RedactionRules {
    /// The built-in rules (the default).
    pub fn new() -> Self {
        Self::default()
    }

    /// No redaction at all.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether redaction is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Turns redaction on or off.
    pub fn enabled(mut self, on: bool) -> Self {
        self.enabled = on;
        self
    }

    /// Adds a pattern: text matching `regex` anywhere in a string becomes `[REDACTED:kind]`.
    pub fn with_pattern(mut self, kind: &str, regex: &str) -> Result<Self, RedactionError> {
        if !is_kind(kind) {
            return Err(RedactionError::BadKind {
                kind: kind.to_string(),
            });
        }
        let bad = |source| RedactionError::BadPattern {
            kind: kind.to_string(),
            source: Box::new(source),
        };
        let probe = Regex::new(regex).map_err(bad)?;
        if probe.is_match("") {
            return Err(RedactionError::EmptyMatch {
                kind: kind.to_string(),
            });
        }
        let whole = Regex::new(&format!("^(?:{regex})$")).map_err(bad)?;
        self.patterns.push(Pattern {
            kind: kind.to_string(),
            source: regex.to_string(),
            whole,
        });
        self.rebuild()?;
        Ok(self)
    }

    /// Adds a sensitive key: values under keys whose last words are `key`'s words are replaced
    /// (kind: those words joined by `_`, e.g. `session_id`).
    pub fn with_key(mut self, key: &str) -> Result<Self, RedactionError> {
        let words = key_words(key);
        if words.is_empty() {
            return Err(RedactionError::EmptyKey {
                key: key.to_string(),
            });
        }
        let rule = KeyRule {
            kind: words.join("_"),
            words,
        };
        if !self.keys.contains(&rule) {
            self.keys.push(rule);
        }
        self.last_words = self.key_last_words();
        Ok(self)
    }

    /// Opts a key out: the value under a key with exactly these words (`max_token`, `maxToken`
    /// and `MAX-TOKEN` are one key) is kept as it is, nothing inside it redacted.
    pub fn allow_key(mut self, key: &str) -> Result<Self, RedactionError> {
        let words = key_words(key);
        if words.is_empty() {
            return Err(RedactionError::EmptyKey {
                key: key.to_string(),
            });
        }
        self.allowed_keys.insert(words);
        Ok(self)
    }

    /// Opts a pattern out by its kind (a built-in one such as `jwt`, or one added with
    /// [`with_pattern`](Self::with_pattern)); an unknown kind is an error, so that a typo does
    /// not go unnoticed.
    pub fn allow_pattern(mut self, kind: &str) -> Result<Self, RedactionError> {
        if !self.patterns.iter().any(|p| p.kind == kind) {
            return Err(RedactionError::UnknownKind {
                kind: kind.to_string(),
                known: self.pattern_kinds().join(", "),
            });
        }
        self.allowed_patterns.insert(kind.to_string());
        self.rebuild()?;
        Ok(self)
    }

    /// The kinds of every pattern (built-in and added), in the order they are tried, each once.
    pub fn pattern_kinds(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in &self.patterns {
            if !out.contains(&p.kind.as_str()) {
                out.push(&p.kind);
            }
        }
        out
    }

    fn active_patterns(&self) -> impl Iterator<Item = &Pattern> {
        self.patterns
            .iter()
            .filter(|p| !self.allowed_patterns.contains(&p.kind))
    }

    /// Every active pattern as one alternation (empty when there is none).
    fn alternation(&self) -> String {
        let parts: Vec<String> = self
            .active_patterns()
            .map(|p| format!("(?:{})", p.source))
            .collect();
        parts.join("|")
    }

    fn key_last_words(&self) -> BTreeSet<String> {
        self.keys
            .iter()
            .filter_map(|k| k.words.last().cloned())
            .collect()
    }

    /// Compiles the active patterns into one expression again.
    fn rebuild(&mut self) -> Result<(), RedactionError> {
        let alternation = self.alternation();
        self.combined = if alternation.is_empty() {
            None
        } else {
            let compiled = Regex::new(&alternation).map_err(|e| RedactionError::TooLarge {
                source: Box::new(e),
            })?;
            Some(compiled)
        };
        Ok(())
    }

    fn key_verdict(&self, key: &str) -> KeyVerdict<'_> {
        if self.allowed_keys.is_empty() {
            let lower = key.to_ascii_lowercase();
            if !self.last_words.iter().any(|w| lower.contains(w.as_str())) {
                return KeyVerdict::Plain;
            }
        }
        let words = key_words(key);
        if self.allowed_keys.contains(&words) {
            return KeyVerdict::Allowed;
        }
        self.keys
            .iter()
            .find(|k| words.ends_with(&k.words))
            .map_or(KeyVerdict::Plain, |k| KeyVerdict::Sensitive(&k.kind))
    }

    /// `text` with every secret it holds replaced by its marker, and how many were replaced;
    /// `None` if there is none (the common case costs one scan and no allocation).
    pub fn redact_text(&self, text: &str) -> Option<(String, u64)> {
        if !self.enabled {
            return None;
        }
        let combined = self.combined.as_ref()?;
        let mut matches = combined.find_iter(text).peekable();
        matches.peek()?;
        let markers: Vec<(usize, usize)> = if text.contains(MARKER_PREFIX) {
            self.marker
                .find_iter(text)
                .map(|m| (m.start(), m.end()))
                .collect()
        } else {
            Vec::new()
        };
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        let mut count = 0;
        for m in matches {
            if markers.iter().any(|&(s, e)| m.start() < e && s < m.end()) {
                continue;
            }
            let kind = self
                .active_patterns()
                .find(|p| p.whole.is_match(m.as_str()))
                .map_or("secret", |p| p.kind.as_str());
            out.push_str(&text[last..m.start()]);
            out.push_str(MARKER_PREFIX);
            out.push_str(kind);
            out.push(']');
            last = m.end();
            count += 1;
        }
        if count == 0 {
            return None;
        }
        out.push_str(&text[last..]);
        Some((out, count))
    }

    /// `value` with its secrets replaced (strings scanned, values under sensitive keys replaced
    /// whole), and how many were replaced; `None` if there is none.
    pub fn redact_value(&self, value: &Value) -> Option<(Value, u64)> {
        if !self.enabled {
            return None;
        }
        match value {
            Value::String(s) => self.redact_text(s).map(|(t, n)| (Value::String(t), n)),
            Value::Array(items) => self
                .redact_values(items)
                .map(|(items, n)| (Value::Array(items), n)),
            Value::Object(map) => self
                .redact_object(map)
                .map(|(map, n)| (Value::Object(map), n)),
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
        }
    }

    /// [`redact_value`](Self::redact_value) of each item of a list.
    pub fn redact_values(&self, items: &[Value]) -> Option<(Vec<Value>, u64)> {
        super::items::redact_each(items, |item| self.redact_value(item))
    }

    /// An object with its secrets replaced: values under sensitive keys replaced whole, the
    /// others redacted inside; `None` if nothing was.
    pub fn redact_object(&self, map: &Map<String, Value>) -> Option<(Map<String, Value>, u64)> {
        if !self.enabled {
            return None;
        }
        let mut out: Option<Map<String, Value>> = None;
        let mut count = 0;
        for (key, value) in map {
            if let Some((value, n)) = self.redact_entry(key, value) {
                out.get_or_insert_with(|| map.clone())
                    .insert(key.clone(), value);
                count += n;
            }
        }
        out.map(|o| (o, count))
    }

    /// The value of one object member, redacted: replaced whole under a sensitive key, kept
    /// under an allowed one, redacted inside otherwise; `None` if nothing was.
    pub fn redact_entry(&self, key: &str, value: &Value) -> Option<(Value, u64)> {
        if !self.enabled {
            return None;
        }
        match self.key_verdict(key) {
            KeyVerdict::Allowed => None,
            KeyVerdict::Sensitive(kind) => {
                holds_something(value).then(|| (Value::String(marker(kind)), 1))
            }
            KeyVerdict::Plain => self.redact_value(value),
        }
    }
}

/// `[REDACTED:kind]`.
pub fn marker(kind: &str) -> String {
    format!("{MARKER_PREFIX}{kind}]")
}

/// Whether a value under a sensitive key holds something to hide: not `null`, a boolean, an
/// empty string, list or object, or a marker already.
fn holds_something(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(_) => false,
        Value::String(s) => !s.is_empty() && !is_marker(s),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(_) => true,
    }
}

/// Whether `s` is exactly one marker.
fn is_marker(s: &str) -> bool {
    s.strip_prefix(MARKER_PREFIX)
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(is_kind)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    /// Secrets of every built-in kind (made up, shaped like the real thing).
    pub(crate) const SAMPLES: &[(&str, &str)] = &[
        ("openai_key", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
        ("anthropic_key", "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd"),
        ("github_token", "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"),
        ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
        ("slack_token", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"),
        (
            "jwt",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        (
            "private_key",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc==\n-----END RSA PRIVATE KEY-----",
        ),
        ("bearer_token", "Bearer abcdefghijklmnopqrstuvwxyz0123"),
    ];

    #[test]
    fn built_in_rules_compile_and_find_every_kind() {
        let rules = RedactionRules::new();
        for (kind, secret) in SAMPLES {
            let text = format!("before {secret} after");
            let (out, n) = rules.redact_text(&text).unwrap_or_else(|| panic!("{kind}"));
            assert_eq!(out, format!("before [REDACTED:{kind}] after"), "{kind}");
            assert_eq!(n, 1);
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let rules = RedactionRules::new();
        for text in [
            "",
            "the task-force met",
            "sk-short",
            "ask-me-anything about risk-management please",
            "AKIA is a prefix, AKIAlowercase1234567 is not a key",
            "eyJ alone",
            "bearer of bad news",
            "[REDACTED:openai_key]",
        ] {
            assert!(rules.redact_text(text).is_none(), "{text}");
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_the_second_time() {
        let rules = RedactionRules::new()
            .with_pattern("everything_redacted", r"REDACTED")
            .unwrap();
        let text = format!("a {} b", SAMPLES[0].1);
        let (once, _) = rules.redact_text(&text).unwrap();
        assert_eq!(once, "a [REDACTED:openai_key] b");
        assert!(rules.redact_text(&once).is_none());
    }

    #[test]
    fn keys_are_compared_by_words() {
        for (key, words) in [
            ("apiKey", vec!["api", "key"]),
            ("APIKey", vec!["api", "key"]),
            ("x-api-key", vec!["x", "api", "key"]),
            ("OPENAI_API_KEY", vec!["openai", "api", "key"]),
            ("db.password", vec!["db", "password"]),
            ("tokens_used", vec!["tokens", "used"]),
            ("v2Token", vec!["v2", "token"]),
        ] {
            assert_eq!(key_words(key), words, "{key}");
        }
        let rules = RedactionRules::new();
        let v = json!({
            "password": "hunter2", "apiKey": "abc", "github_token": "t", "maxTokens": 100,
            "tokens_used": 5, "token": null, "secret": "", "Authorization": {"scheme": "basic"},
            "nested": {"db_password": 1234, "user": "bob"}, "keep": true
        });
        let (out, n) = rules.redact_value(&v).unwrap();
        assert_eq!(
            out,
            json!({
                "password": "[REDACTED:password]", "apiKey": "[REDACTED:api_key]",
                "github_token": "[REDACTED:token]", "maxTokens": 100, "tokens_used": 5,
                "token": null, "secret": "", "Authorization": "[REDACTED:authorization]",
                "nested": {"db_password": "[REDACTED:password]", "user": "bob"}, "keep": true
            })
        );
        assert_eq!(n, 5);
        assert!(rules.redact_value(&out).is_none(), "idempotent");
    }

    #[test]
    fn user_rules_and_opt_outs() {
        let rules = RedactionRules::new()
            .with_pattern("ticket", "TCK-[0-9]{6}")
            .unwrap()
            .with_key("session_id")
            .unwrap()
            .allow_key("token")
            .unwrap()
            .allow_pattern("jwt")
            .unwrap();
        let jwt = SAMPLES[5].1;
        let v = json!({
            "note": "see TCK-123456", "sessionId": "s-1", "token": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8",
            "jwt": jwt, "access_token": "x"
        });
        let (out, n) = rules.redact_value(&v).unwrap();
        assert_eq!(
            out,
            json!({
                "note": "see [REDACTED:ticket]", "sessionId": "[REDACTED:session_id]",
                "token": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8", "jwt": jwt,
                "access_token": "[REDACTED:token]"
            })
        );
        assert_eq!(n, 3);
        assert!(matches!(
            RedactionRules::new().allow_pattern("jwtt"),
            Err(RedactionError::UnknownKind { .. })
        ));
        assert!(matches!(
            RedactionRules::new().with_pattern("Bad Kind", "x"),
            Err(RedactionError::BadKind { .. })
        ));
        assert!(matches!(
            RedactionRules::new().with_pattern("bad", "("),
            Err(RedactionError::BadPattern { .. })
        ));
        assert!(matches!(
            RedactionRules::new().with_pattern("empty", "x*"),
            Err(RedactionError::EmptyMatch { .. })
        ));
        assert!(RedactionRules::disabled()
            .redact_text(SAMPLES[0].1)
            .is_none());
    }
}
