//! The chain of format migrations.
//!
//! Each [`MigrationStep`] turns a document of one version into a document of the next; the chain
//! is ordered by semver and ends at [`super::CURRENT_VERSION`]. Steps work on JSON values, so a
//! step never depends on the typed model of a later version. Old schemas and steps are never
//! edited: a new version adds a schema and a step.

use super::error::LoadError;
use super::{v0, CURRENT_VERSION};
use serde_json::Value;

/// One step of the chain.
#[derive(Debug, Clone, Copy)]
pub struct MigrationStep {
    /// The version the step reads.
    pub from: &'static str,
    /// The version the step writes.
    pub to: &'static str,
    /// What it does, in a line.
    pub summary: &'static str,
    /// The conversion.
    pub apply: fn(Value) -> Result<Value, LoadError>,
}

/// Every registered step, oldest first.
pub const STEPS: &[MigrationStep] = &[MigrationStep {
    from: "0.0.1",
    to: "1.0.0",
    summary: "TypeScript CAF / seed format to caf 1.0.0: RFC 3339 times, lineage from parent, open reasons mapped, unknown fields kept in extensions",
    apply: v0::migrate_to_1_0_0,
}];

/// The current (newest) version.
pub fn current() -> semver::Version {
    semver::Version::parse(CURRENT_VERSION).unwrap_or_else(|_| semver::Version::new(1, 0, 0))
}

/// Every version caf can read, oldest first.
pub fn known_versions() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = STEPS.iter().map(|s| s.from).collect();
    v.push(CURRENT_VERSION);
    v
}

/// Applies the steps that lead from `version` to the current version.
pub fn to_current(version: &semver::Version, mut doc: Value) -> Result<Value, LoadError> {
    let mut at = version.to_string();
    while at != CURRENT_VERSION {
        let step =
            STEPS
                .iter()
                .find(|s| s.from == at)
                .ok_or_else(|| LoadError::UnknownVersion {
                    found: at.clone(),
                    known: known_versions().join(", "),
                })?;
        doc = (step.apply)(doc)?;
        at = step.to.to_string();
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_ordered_and_ends_at_current() {
        let mut prev: Option<semver::Version> = None;
        for s in STEPS {
            let from = semver::Version::parse(s.from).unwrap();
            let to = semver::Version::parse(s.to).unwrap();
            assert!(from < to, "{} -> {}", s.from, s.to);
            if let Some(p) = prev {
                assert_eq!(p, from, "steps must chain");
            }
            prev = Some(to);
        }
        assert_eq!(prev.unwrap().to_string(), CURRENT_VERSION);
    }
}
