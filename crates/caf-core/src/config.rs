//! [`Config`]: a checkpoint directory's settings, read from `DIR/caf.toml`.
//!
//! ```toml
//! durability = "async"    # saves return once handed to a background writer (default "sync")
//!
//! [retention]
//! keep_last = 50          # per execution
//! max_age = "30d"
//! protect_labels = ["keep"]
//! auto_prune = false      # prune after each save (opt-in)
//!
//! [[retention.tiers]]     # all of the last hour
//! within = "1h"
//!
//! [[retention.tiers]]     # then one per hour for a day
//! within = "1d"
//! every = "1h"
//! max_per_execution = 24  # optional
//! ```
//!
//! ```toml
//! [redaction]             # secrets are replaced by [REDACTED:kind] before a save (see caf_core::redact)
//! enabled = true          # the default
//! keys = ["session_id"]   # more sensitive keys: their values are replaced whole
//! allow_keys = ["token"]  # values under these keys are kept as they are
//! allow_patterns = ["jwt"] # pattern kinds turned off
//!
//! [[redaction.patterns]]  # patterns of your own
//! kind = "ticket"
//! regex = "TCK-[0-9]{6}"
//! ```
//!
//! Every key is optional; an absent file means the defaults, which delete nothing and redact
//! with every built-in rule. A key caf
//! does not know is refused (a misspelt `keep_lats` must not silently keep everything), with
//! the file, the line and the key in the message. Tiers must reach strictly further one after
//! another and have durations longer than zero ([`check_tiers`]).
//!
//! Command-line flags override single fields through [`RetentionPolicy::with_overrides`].
//!
//! ```
//! use caf_core::config::Config;
//!
//! let config = Config::parse("[retention]\nkeep_last = 5\n", "caf.toml".as_ref()).unwrap();
//! let policy = config.retention.policy().with_overrides(None, Some("30d".parse().unwrap()), None);
//! assert_eq!(policy.keep_last, Some(5));
//! assert_eq!(policy.max_age.map(|d| d.to_string()).as_deref(), Some("30d"));
//! assert!(Config::parse("[retention]\nkeep_lats = 5\n", "caf.toml".as_ref()).is_err());
//! ```

use crate::duration::Duration;
use crate::redact::{RedactionError, RedactionRules};
use crate::retention::{check_tiers, RetentionPolicy, Tier, TierError};
use crate::store::SaveMode;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The name of the configuration file in a checkpoint directory.
pub const CONFIG_FILE: &str = "caf.toml";

/// A checkpoint directory's settings (`DIR/caf.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// `durability = "sync" | "async"`: when the saves of the commands that save many
    /// checkpoints (`caf demo`) return; the command line's `--durability` wins; unset means
    /// `sync`. Single-save commands (`caf save`, `caf fork`) write before they exit either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durability: Option<SaveMode>,
    /// The `[retention]` table: what `caf prune` (and automatic pruning) keeps.
    #[serde(default)]
    pub retention: RetentionConfig,
    /// The `[redaction]` table: what counts as a secret in this directory's checkpoints.
    #[serde(default)]
    pub redaction: RedactionConfig,
}

/// The `[redaction]` table (see [`crate::redact`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RedactionConfig {
    /// Redact at all (default `true`).
    pub enabled: bool,
    /// Patterns of the user's own (`[[redaction.patterns]]` tables).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<PatternConfig>,
    /// More sensitive keys: values under keys ending with these words are replaced whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// Keys whose values are kept as they are (an opt-out per key).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_keys: Vec<String>,
    /// Pattern kinds turned off (an opt-out per pattern, built-in or not), e.g. `jwt`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow_patterns: Vec<String>,
}

/// One `[[redaction.patterns]]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternConfig {
    /// What the marker calls it: `[REDACTED:kind]` (a snake_case word).
    pub kind: String,
    /// A regular expression (Rust `regex` syntax) matched anywhere in a string.
    pub regex: String,
}

impl Default for RedactionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            patterns: Vec::new(),
            keys: Vec::new(),
            allow_keys: Vec::new(),
            allow_patterns: Vec::new(),
        }
    }
}

impl RedactionConfig {
    /// The rules this table describes: the built-in ones, with its additions and opt-outs.
    pub fn rules(&self) -> Result<RedactionRules, RedactionError> {
        let mut rules = RedactionRules::new().enabled(self.enabled);
        for p in &self.patterns {
            rules = rules.with_pattern(&p.kind, &p.regex)?;
        }
        for k in &self.keys {
            rules = rules.with_key(k)?;
        }
        for k in &self.allow_keys {
            rules = rules.allow_key(k)?;
        }
        for kind in &self.allow_patterns {
            rules = rules.allow_pattern(kind)?;
        }
        Ok(rules)
    }
}

/// The `[retention]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RetentionConfig {
    /// Per execution, keep this many of the newest checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_last: Option<usize>,
    /// Delete checkpoints older than this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_age: Option<Duration>,
    /// Checkpoints carrying any of these labels are always kept (default `["keep"]`).
    pub protect_labels: Vec<String>,
    /// Prune after each save (default `false`). The library only carries the setting; the
    /// code that saves decides whether to honour it.
    pub auto_prune: bool,
    /// Thinning by age, finest first (`[[retention.tiers]]` tables).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<Tier>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        let RetentionPolicy {
            keep_last,
            max_age,
            tiers,
            protect_labels,
        } = RetentionPolicy::default();
        Self {
            keep_last,
            max_age,
            protect_labels,
            auto_prune: false,
            tiers,
        }
    }
}

impl RetentionConfig {
    /// The retention policy this table describes.
    pub fn policy(&self) -> RetentionPolicy {
        RetentionPolicy {
            keep_last: self.keep_last,
            max_age: self.max_age,
            tiers: self.tiers.clone(),
            protect_labels: self.protect_labels.clone(),
        }
    }

    /// The policy to prune by after each save: [`Self::policy`] when `auto_prune` is set and
    /// the policy has rules, else `None`.
    pub fn auto_prune_policy(&self) -> Option<RetentionPolicy> {
        let policy = self.policy();
        (self.auto_prune && policy.has_rules()).then_some(policy)
    }
}

/// Why a configuration file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML, has a key caf does not know, or a value of the wrong kind.
    #[error("{}{}: {message}", path.display(), position(*line, *column))]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line (from 1), when the parser points at one.
        line: Option<usize>,
        /// The column (from 1, in characters), when the parser points at one.
        column: Option<usize>,
        /// What is wrong, naming the key (`unknown field `keep_lats`, expected one of …`).
        message: String,
    },
    /// The `[redaction]` table holds a bad pattern, key or opt-out.
    #[error("{}: [redaction]: {source}", path.display())]
    Redaction {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: RedactionError,
    },
    /// The `[[retention.tiers]]` do not make sense.
    #[error("{}: [[retention.tiers]]: {source}", path.display())]
    Tiers {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: TierError,
    },
}

/// `:line:column` (or `:line`, or nothing) for an error message.
fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

impl Config {
    /// The path of the configuration file of checkpoint directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CONFIG_FILE)
    }

    /// Reads `dir/caf.toml`; the defaults if there is no such file.
    pub fn load(dir: &Path) -> Result<Config, ConfigError> {
        let path = Self::path(dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// Parses the text of a configuration file; `path` is only used in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .and_then(|span| text.get(..span.start))
                .map(|before| {
                    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                    (
                        Some(before.matches('\n').count() + 1),
                        Some(before[line_start..].chars().count() + 1),
                    )
                })
                .unwrap_or((None, None));
            ConfigError::Parse {
                path: path.to_path_buf(),
                line,
                column,
                message: e.message().trim_end().to_string(),
            }
        })?;
        check_tiers(&config.retention.tiers).map_err(|source| ConfigError::Tiers {
            path: path.to_path_buf(),
            source,
        })?;
        config.redaction_rules(path)?;
        Ok(config)
    }

    /// The redaction rules of the `[redaction]` table; `path` (the file) is only used in errors.
    pub fn redaction_rules(&self, path: &Path) -> Result<RedactionRules, ConfigError> {
        self.redaction
            .rules()
            .map_err(|source| ConfigError::Redaction {
                path: path.to_path_buf(),
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("dir/caf.toml"))
    }

    #[test]
    fn reads_the_documented_example() {
        let config = parse(
            r#"
[retention]
keep_last = 50          # per execution
max_age = "30d"
protect_labels = ["keep", "release"]
auto_prune = true

[[retention.tiers]]
within = "1h"

[[retention.tiers]]
within = "1d"
every = "1h"
max_per_execution = 24
"#,
        )
        .unwrap();
        let r = &config.retention;
        assert_eq!(r.keep_last, Some(50));
        assert_eq!(r.max_age, Some(Duration::from_days(30)));
        assert!(r.auto_prune);
        assert_eq!(
            r.policy(),
            RetentionPolicy {
                keep_last: Some(50),
                max_age: Some(Duration::from_days(30)),
                tiers: vec![
                    Tier::all(Duration::from_hours(1)),
                    Tier::every(Duration::from_days(1), Duration::from_hours(1)).at_most(24),
                ],
                protect_labels: vec!["keep".into(), "release".into()],
            }
        );
    }

    #[test]
    fn durability_is_sync_or_async_and_nothing_else() {
        assert_eq!(parse("").unwrap().durability, None);
        assert_eq!(
            parse("durability = \"async\"").unwrap().durability,
            Some(SaveMode::Async)
        );
        assert_eq!(
            parse("durability = \"sync\"").unwrap().durability,
            Some(SaveMode::Sync)
        );
        let e = parse("durability = \"eventually\"")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("dir/caf.toml:1:"), "{e}");
        assert!(e.contains("eventually"), "{e}");
    }

    #[test]
    fn absent_keys_and_files_mean_the_defaults() {
        assert_eq!(parse("").unwrap(), Config::default());
        assert_eq!(parse("[retention]\n").unwrap(), Config::default());
        let defaults = Config::default().retention;
        assert_eq!(defaults.policy(), RetentionPolicy::default());
        assert!(!defaults.auto_prune);
        assert!(!defaults.policy().has_rules());

        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(dir.path()).unwrap(), Config::default());
        assert_eq!(
            Config::load(&dir.path().join("missing")).unwrap(),
            Config::default()
        );
        std::fs::write(Config::path(dir.path()), "[retention]\nkeep_last = 3\n").unwrap();
        assert_eq!(
            Config::load(dir.path()).unwrap().retention.keep_last,
            Some(3)
        );
    }

    #[test]
    fn unknown_keys_are_refused_with_file_line_and_key() {
        for (text, key, line) in [
            ("[retention]\nkeep_lats = 5\n", "keep_lats", 2),
            ("[retension]\nkeep_last = 5\n", "retension", 1),
            (
                "[retention]\n[[retention.tiers]]\nwithin = \"1h\"\nevery_ = \"1m\"\n",
                "every_",
                4,
            ),
        ] {
            let err = parse(text).unwrap_err();
            let ConfigError::Parse {
                ref path,
                line: Some(at),
                ref message,
                ..
            } = err
            else {
                panic!("{err:?}");
            };
            assert_eq!(path, Path::new("dir/caf.toml"));
            assert_eq!(at, line, "{text:?}: {message}");
            let shown = err.to_string();
            assert!(
                shown.starts_with(&format!("dir/caf.toml:{line}:"))
                    && shown.contains(&format!(": unknown field `{key}`, expected ")),
                "{shown}"
            );
        }
    }

    #[test]
    fn bad_values_are_refused() {
        let err = parse("[retention]\nmax_age = \"30 days\"\n").unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with("dir/caf.toml:2:"), "{shown}");
        assert!(shown.contains("s, m, h, d, w"), "{shown}");
        assert!(parse("[retention]\nkeep_last = -1\n").is_err());
        assert!(parse("[retention]\nauto_prune = \"yes\"\n").is_err());
        assert!(parse("[retention\n").is_err());
        assert!(parse("[[retention.tiers]]\nevery = \"1h\"\n").is_err());

        let err =
            parse("[[retention.tiers]]\nwithin = \"1d\"\n[[retention.tiers]]\nwithin = \"1h\"\n")
                .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Tiers {
                source: TierError::NotIncreasing { tier: 2, .. },
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "dir/caf.toml: [[retention.tiers]]: tier 2 (1h:all) must reach further than the one \
             before it (1d)"
        );
        assert!(matches!(
            parse("[[retention.tiers]]\nwithin = \"1d\"\nevery = \"0s\"\n"),
            Err(ConfigError::Tiers {
                source: TierError::Zero { tier: 1, .. },
                ..
            })
        ));
    }

    #[test]
    fn the_redaction_table_adds_rules_and_opt_outs() {
        let config = parse(
            r#"
[redaction]
keys = ["session_id"]
allow_keys = ["token"]
allow_patterns = ["jwt", "ticket"]

[[redaction.patterns]]
kind = "ticket"
regex = "TCK-[0-9]{6}"

[[redaction.patterns]]
kind = "badge"
regex = "BDG-[0-9]{4}"
"#,
        )
        .unwrap();
        let rules = config.redaction_rules(Path::new("caf.toml")).unwrap();
        assert!(rules.is_enabled());
        let v = serde_json::json!({"a": "TCK-123456 BDG-1234", "session_id": "s", "token": "t"});
        let (out, n) = rules.redact_value(&v).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"a": "TCK-123456 [REDACTED:badge]", "session_id": "[REDACTED:session_id]", "token": "t"})
        );
        assert_eq!(n, 2);
        assert!(Config::default().redaction.enabled);
        let off = parse("[redaction]\nenabled = false\n").unwrap();
        assert!(!off.redaction_rules(Path::new("x")).unwrap().is_enabled());
    }

    #[test]
    fn bad_redaction_tables_are_refused_in_one_line() {
        for (text, says) in [
            (
                "[redaction]\nallow_pattern = [\"jwt\"]\n",
                "unknown field `allow_pattern`",
            ),
            (
                "[redaction]\nallow_patterns = [\"jwtt\"]\n",
                "no redaction pattern of kind \"jwtt\"",
            ),
            (
                "[[redaction.patterns]]\nkind = \"t\"\nregex = \"(\"\n",
                "redaction pattern \"t\" is not a valid regular expression",
            ),
            (
                "[[redaction.patterns]]\nkind = \"T T\"\nregex = \"x\"\n",
                "not a snake_case word",
            ),
            (
                "[[redaction.patterns]]\nkind = \"t\"\n",
                "missing field `regex`",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.starts_with("dir/caf.toml"), "{err}");
            assert!(err.contains(says), "{text}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(Config::path(dir.path())).unwrap();
        let err = Config::load(dir.path()).unwrap_err();
        assert!(matches!(err, ConfigError::Read { .. }), "{err:?}");
        assert!(err.to_string().contains("caf.toml"), "{err}");
    }
}
