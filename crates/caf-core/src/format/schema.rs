//! The JSON Schemas of every format version, embedded, compiled once, and applied on load.

use super::error::Violation;
use serde_json::Value;
use std::sync::OnceLock;

/// The schema of format 1.0.0 (`schemas/checkpoint-1.0.0.schema.json`).
pub const SCHEMA_1_0_0: &str = include_str!("../../../../schemas/checkpoint-1.0.0.schema.json");
/// The schema of format 0.0.1, both dialects (`schemas/checkpoint-0.0.1.schema.json`).
pub const SCHEMA_0_0_1: &str = include_str!("../../../../schemas/checkpoint-0.0.1.schema.json");

/// The `$id` (and `$schema` value of documents) of format 1.0.0.
pub const SCHEMA_URL_1_0_0: &str = "https://caf.dev/schemas/checkpoint-1.0.0.schema.json";

/// The text of the schema for `version`, if there is one.
pub fn schema_text(version: &str) -> Option<&'static str> {
    match version {
        "1.0.0" => Some(SCHEMA_1_0_0),
        "0.0.1" => Some(SCHEMA_0_0_1),
        _ => None,
    }
}

fn compile(text: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(text).expect("embedded schema is valid JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .expect("embedded schema compiles")
}

fn validator(version: &str) -> Option<&'static jsonschema::Validator> {
    static V1: OnceLock<jsonschema::Validator> = OnceLock::new();
    static V0: OnceLock<jsonschema::Validator> = OnceLock::new();
    match version {
        "1.0.0" => Some(V1.get_or_init(|| compile(SCHEMA_1_0_0))),
        "0.0.1" => Some(V0.get_or_init(|| compile(SCHEMA_0_0_1))),
        _ => None,
    }
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
    fn embedded_schemas_compile_and_name_themselves() {
        for (version, text) in [("1.0.0", SCHEMA_1_0_0), ("0.0.1", SCHEMA_0_0_1)] {
            let doc: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                doc["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert!(doc["$id"].as_str().unwrap().contains(version));
            assert!(validator(version).is_some());
        }
        assert_eq!(
            serde_json::from_str::<Value>(SCHEMA_1_0_0).unwrap()["$id"],
            SCHEMA_URL_1_0_0
        );
    }

    #[test]
    fn reports_pointer_of_violation() {
        let v = validate(
            "1.0.0",
            &serde_json::json!({"version": "1.0.0", "id": "../x"}),
        )
        .unwrap();
        assert!(v.iter().any(|v| v.pointer == "/id"), "{v:?}");
        assert!(
            v.iter().any(|v| v.pointer.is_empty()),
            "missing fields reported at root"
        );
    }
}
