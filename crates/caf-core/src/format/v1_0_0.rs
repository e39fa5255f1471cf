//! Format 1.0.0, frozen: its document types as they were when 1.0.0 was current, and the step
//! to 1.1.0.
//!
//! The 0.0.1 → 1.0.0 step ([`super::v0`]) builds these types, never today's typed model, so that
//! what it produces cannot change when the current format grows. They only serialize: nothing
//! reads a document into them.

use super::error::LoadError;
use super::model::{CheckpointReason, JsonObject, ToolStatus};
use crate::clock::Timestamp;
use crate::id::{CheckpointId, ExecutionId};
use serde::Serialize;
use serde_json::Value;

fn is_empty_object(m: &JsonObject) -> bool {
    m.is_empty()
}

/// The `$schema` of 1.0.0 documents.
pub(super) const SCHEMA_URL: &str = "https://caf.dev/schemas/checkpoint-1.0.0.schema.json";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Checkpoint {
    #[serde(rename = "$schema")]
    pub(super) schema: String,
    pub(super) agent_id: String,
    pub(super) execution_id: ExecutionId,
    #[serde(skip_serializing_if = "is_empty_object")]
    pub(super) extensions: JsonObject,
    pub(super) id: CheckpointId,
    pub(super) metadata: Metadata,
    pub(super) parent_id: Option<CheckpointId>,
    pub(super) snapshot: Snapshot,
    pub(super) timestamp: Timestamp,
    pub(super) version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) agent_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) branch: Option<Branch>,
    pub(super) checkpoint_reason: CheckpointReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) description: Option<String>,
    pub(super) duration_ms: u64,
    #[serde(skip_serializing_if = "is_empty_object")]
    pub(super) extensions: JsonObject,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) labels: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) name: Option<String>,
    pub(super) step_number: u64,
    pub(super) tokens_used: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Branch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(super) struct Snapshot {
    pub(super) context: Context,
    pub(super) progress: Progress,
    pub(super) thought_chain: ThoughtChain,
    pub(super) tool_state: ToolState,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(super) struct ThoughtChain {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) current_thought_id: Option<String>,
    pub(super) thoughts: Vec<Thought>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Thought {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) alternatives: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) children: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) confidence: Option<f64>,
    pub(super) content: String,
    pub(super) created_at: Timestamp,
    #[serde(skip_serializing_if = "is_empty_object")]
    pub(super) extensions: JsonObject,
    pub(super) id: String,
    #[serde(skip_serializing_if = "is_empty_object")]
    pub(super) metadata: JsonObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) parent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) reasoning: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(super) struct Context {
    pub(super) history: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) memory: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) messages: Vec<Value>,
    pub(super) state: JsonObject,
    pub(super) variables: JsonObject,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(super) struct ToolState {
    pub(super) calls: Vec<ToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) last_call_id: Option<String>,
    pub(super) results: JsonObject,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct ToolCall {
    pub(super) args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) completed_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<String>,
    #[serde(skip_serializing_if = "is_empty_object")]
    pub(super) extensions: JsonObject,
    pub(super) id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) started_at: Option<Timestamp>,
    pub(super) status: ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) success: Option<bool>,
    pub(super) tool_id: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(super) struct Progress {
    pub(super) completed_steps: Vec<CompletedStep>,
    pub(super) iterations_completed: u64,
    pub(super) pending_steps: Vec<String>,
    pub(super) step_number: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) total_steps: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct CompletedStep {
    pub(super) completed_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) duration_ms: Option<u64>,
    pub(super) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<Value>,
}

fn year_ok(t: &Timestamp) -> bool {
    (0..=9999).contains(&chrono::Datelike::year(&t.as_datetime()))
}

/// The JSON Pointer of the first time outside the years 0000-9999 (which have no RFC 3339
/// form), if any.
fn bad_time(c: &Checkpoint) -> Option<String> {
    if !year_ok(&c.timestamp) {
        return Some("/timestamp".into());
    }
    let s = &c.snapshot;
    for (i, t) in s.thought_chain.thoughts.iter().enumerate() {
        if !year_ok(&t.created_at) {
            return Some(format!("/snapshot/thought_chain/thoughts/{i}/created_at"));
        }
    }
    for (i, call) in s.tool_state.calls.iter().enumerate() {
        for (f, t) in [
            ("started_at", &call.started_at),
            ("completed_at", &call.completed_at),
        ] {
            if t.as_ref().is_some_and(|t| !year_ok(t)) {
                return Some(format!("/snapshot/tool_state/calls/{i}/{f}"));
            }
        }
    }
    for (i, step) in s.progress.completed_steps.iter().enumerate() {
        if !year_ok(&step.completed_at) {
            return Some(format!(
                "/snapshot/progress/completed_steps/{i}/completed_at"
            ));
        }
    }
    None
}

/// The 1.0.0 document of `c`, refusing (with a pointer) a time that 1.0.0 cannot write.
pub(super) fn to_value(c: &Checkpoint) -> Result<Value, LoadError> {
    if let Some(pointer) = bad_time(c) {
        return Err(LoadError::Invalid {
            pointer,
            message: "year outside 0000-9999".into(),
        });
    }
    serde_json::to_value(c).map_err(|e| LoadError::Invalid {
        pointer: String::new(),
        message: e.to_string(),
    })
}

/// The migration step 1.0.0 → 1.1.0. 1.1.0 only adds optional members (the plan, the task, the
/// last error), so a 1.0.0 document is a 1.1.0 document once its version and `$schema` say so.
pub fn migrate_to_1_1_0(mut doc: Value) -> Result<Value, LoadError> {
    if let Value::Object(m) = &mut doc {
        m.insert("version".into(), Value::from("1.1.0"));
        m.insert(
            "$schema".into(),
            Value::from("https://caf.dev/schemas/checkpoint-1.1.0.schema.json"),
        );
    }
    Ok(doc)
}
