//! The JSON Schemas of every format version, embedded, compiled once, and applied on load.

use super::error::Violation;
use super::versions::{self, VERSIONS};
use serde_json::Value;
use std::sync::OnceLock;

/// The `$schema` URL of the current version.
pub const SCHEMA_URL: &str = versions::CURRENT.schema_url;

/// The schema text of a version, if it is known.
pub fn schema_text(version: &str) -> Option<&'static str> {
    versions::find(version).map(|v| v.schema)
}

fn compile(text: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(text).expect("embedded schema is valid JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .expect("embedded schema compiles")
}

/// The compiled validator of a version, built on first use.
fn validator(version: &str) -> Option<&'static jsonschema::Validator> {
    const N: usize = VERSIONS.len();
    static COMPILED: [OnceLock<jsonschema::Validator>; N] = [const { OnceLock::new() }; N];
    let i = versions::position(version)?;
    Some(COMPILED[i].get_or_init(|| compile(VERSIONS[i].schema)))
}

/// Validates `doc` against the schema of `version`: every violation, or none.
///
/// Returns `None` when caf has no schema for `version`.
pub fn validate(version: &str, doc: &Value) -> Option<Vec<Violation>> {
    let v = validator(version)?;
    if v.is_valid(doc) {
        return Some(Vec::new());
    }
    let mut out: Vec<Violation> = v
        .iter_errors(doc)
        .map(|e| Violation {
            pointer: e.instance_path().to_string(),
            message: e.to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.pointer.cmp(&b.pointer));
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_schema_compiles() {
        for v in VERSIONS {
            assert!(validator(v.version).is_some(), "{}", v.version);
        }
        assert!(validator("9.9.9").is_none());
    }

    #[test]
    fn reports_pointer_of_violation() {
        let v = validate(
            "1.1.0",
            &serde_json::json!({"version": "1.1.0", "id": "../x"}),
        )
        .unwrap();
        assert!(v.iter().any(|v| v.pointer == "/id"), "{v:?}");
        assert!(
            v.iter().any(|v| v.pointer.is_empty()),
            "missing fields reported at root"
        );
    }
}
