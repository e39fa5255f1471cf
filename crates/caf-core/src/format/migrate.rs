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
