//! The registry of format versions: each version is registered once, with everything that
//! depends on it — its JSON Schema (and so the `$schema` URL, its `$id`), its integrity rule,
//! and the migration step that turns its documents into the next version's.
//!
//! Adding a version appends an entry here (and its schema file); the entries before it are
//! never edited, and the last entry is the current version.

use super::error::LoadError;
use super::{v0, v1_0_0};
use serde_json::Value;

/// How a version protects its documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// No checksum (0.0.1).
    None,
    /// `integrity`: `sha256:` + the hex SHA-256 of the canonical text (see
    /// [`super::integrity`]), required.
    Sha256Canonical,
}

/// One format version.
#[derive(Debug, Clone, Copy)]
pub struct FormatVersion {
    /// The version, as documents write it.
    pub version: &'static str,
    /// Its JSON Schema (draft 2020-12).
    pub schema: &'static str,
    /// The URL of the schema: its `$id`, and the `$schema` that documents of this version carry.
    pub schema_url: &'static str,
    /// Its integrity rule.
    pub integrity: Integrity,
    /// The step to the next version (`None` for the current one): it works on JSON values, so
    /// that it never depends on a later version's typed model.
    pub upgrade: Option<Upgrade>,
}

/// A migration step: what it does, and the function.
#[derive(Debug, Clone, Copy)]
pub struct Upgrade {
    /// One line on what the step changes.
    pub summary: &'static str,
    /// The step, on a document that passed this version's schema (and integrity).
    pub apply: fn(Value) -> Result<Value, LoadError>,
}

/// Every version, oldest first; the last one is the current version.
pub const VERSIONS: &[FormatVersion] = &[
    FormatVersion {
        version: "0.0.1",
        schema: include_str!("../../../../schemas/checkpoint-0.0.1.schema.json"),
        schema_url: "https://caf.dev/schemas/checkpoint-0.0.1.schema.json",
        integrity: Integrity::None,
        upgrade: Some(Upgrade {
            summary: "TypeScript CAF / seed format to caf 1.0.0: RFC 3339 times, lineage from parent, open reasons mapped, unknown fields kept in extensions",
            apply: v0::migrate_to_1_0_0,
        }),
    },
    FormatVersion {
        version: "1.0.0",
        schema: include_str!("../../../../schemas/checkpoint-1.0.0.schema.json"),
        schema_url: "https://caf.dev/schemas/checkpoint-1.0.0.schema.json",
        integrity: Integrity::Sha256Canonical,
        upgrade: Some(Upgrade {
            summary: "1.0.0 to 1.1.0: the plan, task and last error become possible; nothing else changes",
            apply: v1_0_0::migrate_to_1_1_0,
        }),
    },
    FormatVersion {
        version: "1.1.0",
        schema: include_str!("../../../../schemas/checkpoint-1.1.0.schema.json"),
        schema_url: "https://caf.dev/schemas/checkpoint-1.1.0.schema.json",
        integrity: Integrity::Sha256Canonical,
        upgrade: None,
    },
];

/// The current version's entry, as a constant.
pub const CURRENT: FormatVersion = VERSIONS[VERSIONS.len() - 1];

/// The current version's entry.
pub fn current() -> &'static FormatVersion {
    &VERSIONS[VERSIONS.len() - 1]
}

/// The entry of `version`, if it is known.
pub fn find(version: &str) -> Option<&'static FormatVersion> {
    VERSIONS.iter().find(|v| v.version == version)
}

/// The position of `version` in [`VERSIONS`].
pub(crate) fn position(version: &str) -> Option<usize> {
    VERSIONS.iter().position(|v| v.version == version)
}

/// Every known version, oldest first.
pub fn known() -> Vec<&'static str> {
    VERSIONS.iter().map(|v| v.version).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_ordered_and_each_but_the_last_upgrades() {
        let parsed: Vec<semver::Version> = VERSIONS
            .iter()
            .map(|v| semver::Version::parse(v.version).unwrap())
            .collect();
        assert!(parsed.windows(2).all(|w| w[0] < w[1]));
        for (i, v) in VERSIONS.iter().enumerate() {
            assert_eq!(v.upgrade.is_some(), i + 1 < VERSIONS.len(), "{}", v.version);
        }
        assert_eq!(current().version, super::super::CURRENT_VERSION);
    }

    #[test]
    fn each_schema_names_itself_and_its_version() {
        for v in VERSIONS {
            let doc: Value = serde_json::from_str(v.schema).unwrap();
            assert_eq!(doc["$id"], v.schema_url, "{}", v.version);
            assert_eq!(
                doc["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert!(v.schema_url.contains(v.version));
        }
    }
}
