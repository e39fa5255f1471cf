//! The chain of format migrations.
//!
//! Each registered version ([`super::versions::VERSIONS`]) but the current one has a step to the
//! next; a document of any known version reaches the current one through every step after it.
//! Steps work on JSON values, so a step never depends on the typed model of a later version.
//! Old schemas and steps are never edited: a new version adds a schema and a step.

use super::error::LoadError;
use super::versions::{self, VERSIONS};
use super::CURRENT_VERSION;
use serde_json::Value;

/// The current (newest) version.
pub fn current() -> semver::Version {
    semver::Version::parse(CURRENT_VERSION).unwrap_or_else(|_| semver::Version::new(1, 0, 0))
}

/// Every version caf can read, oldest first.
pub fn known_versions() -> Vec<&'static str> {
    versions::known()
}

/// Applies the steps that lead from `version` to the current version.
pub fn to_current(version: &semver::Version, doc: Value) -> Result<Value, LoadError> {
    steps(version, CURRENT_VERSION, doc)
}

/// Applies the steps that lead from `version` to `to` (an older or equal known version leaves
/// the document as it is). The golden tests use it to compare what one step produces.
pub fn steps(version: &semver::Version, to: &str, mut doc: Value) -> Result<Value, LoadError> {
    let unknown = |found: String| LoadError::UnknownVersion {
        found,
        known: known_versions().join(", "),
    };
    let from = version.to_string();
    let start = versions::position(&from).ok_or_else(|| unknown(from.clone()))?;
    let end = versions::position(to).ok_or_else(|| unknown(to.to_string()))?;
    for v in VERSIONS.iter().take(end).skip(start) {
        if let Some(step) = v.upgrade {
            doc = (step.apply)(doc)?;
        }
    }
    Ok(doc)
}

/// Infers lineage for checkpoints migrated from a format that had none: within each execution,
/// ordered by timestamp then id, a migrated checkpoint without a parent gets the previous
/// checkpoint as its parent. Checkpoints of the current format, and migrated ones that named
/// their own parent, are left as they are (but still count as predecessors). Returns how many
/// parents were set. Used when a whole directory is migrated.
pub fn infer_parents(items: &mut [super::Decoded]) -> usize {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&items[a].checkpoint, &items[b].checkpoint);
        (&a.execution_id, a.timestamp, &a.id).cmp(&(&b.execution_id, b.timestamp, &b.id))
    });
    let mut set = 0;
    for pair in order.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        let same_execution =
            items[prev].checkpoint.execution_id == items[next].checkpoint.execution_id;
        // Two files holding the same checkpoint (a copy) must not make it its own parent.
        let distinct = items[prev].checkpoint.id != items[next].checkpoint.id;
        let orphan = items[next].was_migrated() && items[next].checkpoint.parent_id.is_none();
        if same_execution && distinct && orphan {
            items[next].checkpoint.parent_id = Some(items[prev].checkpoint.id.clone());
            set += 1;
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(id: &str, exec: &str, ms: i64) -> super::super::Decoded {
        let mut doc: Value = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/v0.0.1/seed-example.json"
        ))
        .unwrap();
        doc["id"] = id.into();
        doc["execution_id"] = exec.into();
        doc["timestamp"] = ms.into();
        super::super::decode_value(doc).unwrap()
    }

    #[test]
    fn parents_are_inferred_per_execution_in_time_order() {
        let mut items = vec![
            seed("c3", "e1", 3000),
            seed("c1", "e1", 1000),
            seed("x1", "e2", 2000),
            seed("c2", "e1", 2000),
        ];
        assert!(items
            .iter()
            .all(|d| d.was_migrated() && d.checkpoint.parent_id.is_none()));
        assert_eq!(infer_parents(&mut items), 2);
        let parent = |i: usize| {
            items[i]
                .checkpoint
                .parent_id
                .as_ref()
                .map(|p| p.to_string())
        };
        assert_eq!(parent(0).as_deref(), Some("c2"));
        assert_eq!(parent(1), None);
        assert_eq!(parent(2), None, "another execution");
        assert_eq!(parent(3).as_deref(), Some("c1"));
    }

    #[test]
    fn current_files_and_explicit_parents_are_kept() {
        let mut items = vec![seed("c1", "e1", 1000), seed("c2", "e1", 2000)];
        let current = super::super::decode(
            &super::super::encode(&items[1].checkpoint).unwrap(),
            &Default::default(),
        )
        .unwrap();
        let mut mixed = vec![items.remove(0), current];
        assert_eq!(
            infer_parents(&mut mixed),
            0,
            "a current-format file is never given a parent"
        );
    }
}
