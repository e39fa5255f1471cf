//! How an item (thought, tool call, completed step) becomes the columns of its row, payload
//! included, and back.
//!
//! A payload is the item's exact JSON less the members a column already holds exactly: a
//! thought's `content` (unless it has a NUL, which the column cannot hold), a tool call's
//! `args` and `result` (JSON text columns). Reading an item back puts them together again.
//! Payloads are written straight from the item (a borrowed view of its fields, in the order the
//! item serializes them), never through an intermediate JSON value.

use crate::checkpoint::checkpoint_row::{Damaged, Place};
use crate::checkpoint::with_members::{Member, WithMembers};
use crate::columns::{count, json, text};
use crate::statement::{row, shape};
use caf_core::format::{Checkpoint, CompletedStep, JsonObject, Thought, ToolCall, ToolStatus};
use caf_core::Timestamp;
use serde::Serialize;
use std::borrow::Cow;

/// What every item row shares: where it is and which checkpoint first showed it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ItemContext<'a> {
    pub line_id: i64,
    pub seq: i64,
    pub execution_id: &'a str,
    pub checkpoint_id: &'a str,
}

impl<'a> ItemContext<'a> {
    /// The context of the rows `c` writes at `place`.
    pub fn of(c: &'a Checkpoint, place: Place) -> Self {
        Self {
            line_id: place.line_id,
            seq: place.seq,
            execution_id: c.execution_id.as_str(),
            checkpoint_id: c.id.as_str(),
        }
    }
}

shape!(
    /// A multi-row insert into `thoughts` (one row per group).
    InsertThoughts,
    "INSERT INTO thoughts (line_id, position, from_seq, execution_id, id, \
     first_checkpoint_id, \"type\", content, confidence, parent_id, created_at, payload) VALUES ",
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ""
);

shape!(
    /// A multi-row insert into `tool_calls`.
    InsertToolCalls,
    "INSERT INTO tool_calls (line_id, position, from_seq, execution_id, id, \
     first_checkpoint_id, tool_id, args, result, success, error, status, started_at, \
     completed_at, payload) VALUES ",
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ""
);

shape!(
    /// A multi-row insert into `steps`.
    InsertSteps,
    "INSERT INTO steps (line_id, position, from_seq, execution_id, first_checkpoint_id, name, \
     completed_at, payload) VALUES ",
    "(?, ?, ?, ?, ?, ?, ?, ?)",
    ""
);

/// A new `thoughts` row.
pub(crate) struct NewThought<'a> {
    ctx: ItemContext<'a>,
    position: i64,
    id: Cow<'a, str>,
    kind: Cow<'a, str>,
    content: Cow<'a, str>,
    confidence: Option<f64>,
    parent_id: Option<Cow<'a, str>>,
    created_at: i64,
    payload: String,
}

impl<'a> NewThought<'a> {
    pub fn new(ctx: ItemContext<'a>, position: usize, t: &'a Thought) -> Self {
        Self {
            ctx,
            position: count(position),
            id: text(&t.id),
            kind: text(&t.kind),
            content: text(&t.content),
            confidence: t.confidence,
            parent_id: t.parent_id.as_deref().map(text),
            created_at: t.created_at.as_micros(),
            payload: thought_payload(t),
        }
    }
}

row!(NewThought<'_>, |r| [
    Int(r.ctx.line_id),
    Int(r.position),
    Int(r.ctx.seq),
    Text(r.ctx.execution_id),
    Text(&r.id),
    Text(r.ctx.checkpoint_id),
    Text(&r.kind),
    Text(&r.content),
    OptFloat(r.confidence),
    OptText(r.parent_id.as_deref()),
    Int(r.created_at),
    Text(&r.payload),
]);

/// A new `tool_calls` row.
pub(crate) struct NewToolCall<'a> {
    ctx: ItemContext<'a>,
    position: i64,
    id: Cow<'a, str>,
    tool_id: Cow<'a, str>,
    args: String,
    result: Option<String>,
    success: Option<bool>,
    error: Option<Cow<'a, str>>,
    status: &'static str,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    payload: String,
}

impl<'a> NewToolCall<'a> {
    pub fn new(ctx: ItemContext<'a>, position: usize, c: &'a ToolCall) -> Self {
        Self {
            ctx,
            position: count(position),
            id: text(&c.id),
            tool_id: text(&c.tool_id),
            args: json(&c.args),
            result: c.result.as_ref().map(json),
            success: c.success,
            error: c.error.as_deref().map(text),
            status: c.status.as_str(),
            started_at: c.started_at.map(|t| t.as_micros()),
            completed_at: c.completed_at.map(|t| t.as_micros()),
            payload: call_payload(c),
        }
    }
}

row!(NewToolCall<'_>, |r| [
    Int(r.ctx.line_id),
    Int(r.position),
    Int(r.ctx.seq),
    Text(r.ctx.execution_id),
    Text(&r.id),
    Text(r.ctx.checkpoint_id),
    Text(&r.tool_id),
    Text(&r.args),
    OptText(r.result.as_deref()),
    OptBool(r.success),
    OptText(r.error.as_deref()),
    Text(r.status),
    OptInt(r.started_at),
    OptInt(r.completed_at),
    Text(&r.payload),
]);

/// A new `steps` row.
pub(crate) struct NewStep<'a> {
    ctx: ItemContext<'a>,
    position: i64,
    name: Cow<'a, str>,
    completed_at: i64,
    payload: String,
}

impl<'a> NewStep<'a> {
    pub fn new(ctx: ItemContext<'a>, position: usize, s: &'a CompletedStep) -> Self {
        Self {
            ctx,
            position: count(position),
            name: text(&s.name),
            completed_at: s.completed_at.as_micros(),
            payload: json(s),
        }
    }
}

row!(NewStep<'_>, |r| [
    Int(r.ctx.line_id),
    Int(r.position),
    Int(r.ctx.seq),
    Text(r.ctx.execution_id),
    Text(r.ctx.checkpoint_id),
    Text(&r.name),
    Int(r.completed_at),
    Text(&r.payload),
]);

fn is_empty(m: &&JsonObject) -> bool {
    m.is_empty()
}

/// A thought as its payload serializes it: every member but `content`, unless the content has
/// a NUL (the column holds it with U+FFFD instead, so the payload keeps the exact text).
#[derive(Serialize)]
struct ThoughtPayload<'a> {
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    alternatives: &'a [serde_json::Value],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    children: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    confidence: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    created_at: &'a Timestamp,
    #[serde(skip_serializing_if = "is_empty")]
    extensions: &'a JsonObject,
    id: &'a str,
    #[serde(skip_serializing_if = "is_empty")]
    metadata: &'a JsonObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<&'a str>,
    #[serde(rename = "type")]
    kind: &'a str,
}

/// A thought's payload: its JSON, without `content` when the column holds it exactly.
pub(crate) fn thought_payload(t: &Thought) -> String {
    // Naming every field (no `..`): a field added to `Thought` fails to compile here until the
    // payload carries it too.
    let Thought {
        alternatives,
        children,
        confidence,
        content,
        created_at,
        extensions,
        id,
        metadata,
        parent_id,
        reasoning,
        kind,
    } = t;
    json(&ThoughtPayload {
        alternatives,
        children,
        confidence: *confidence,
        content: content.contains('\0').then_some(content.as_str()),
        created_at,
        extensions,
        id,
        metadata,
        parent_id: parent_id.as_deref(),
        reasoning: reasoning.as_deref(),
        kind,
    })
}

/// A tool call as its payload serializes it: every member but `args` and `result`.
#[derive(Serialize)]
struct CallPayload<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<&'a Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "is_empty")]
    extensions: &'a JsonObject,
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    started_at: Option<&'a Timestamp>,
    status: &'a ToolStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    success: Option<bool>,
    tool_id: &'a str,
}

/// A tool call's payload: its JSON without `args` and `result` (held by their columns).
pub(crate) fn call_payload(c: &ToolCall) -> String {
    // Every field named, as in `thought_payload`.
    let ToolCall {
        args: _,
        completed_at,
        duration_ms,
        error,
        extensions,
        id,
        result: _,
        started_at,
        status,
        success,
        tool_id,
    } = c;
    json(&CallPayload {
        completed_at: completed_at.as_ref(),
        duration_ms: *duration_ms,
        error: error.as_deref(),
        extensions,
        id,
        started_at: started_at.as_ref(),
        status,
        success: *success,
        tool_id,
    })
}

fn object(payload: &str) -> Result<JsonObject, Damaged> {
    serde_json::from_str(payload).map_err(|e| Damaged(format!("a stored payload: {e}")))
}

fn typed<T: serde::de::DeserializeOwned>(m: JsonObject) -> Result<T, Damaged> {
    T::deserialize(serde_json::Value::Object(m)).map_err(|e| Damaged(e.to_string()))
}

/// A thought from its payload and `content` column.
pub(crate) fn thought_from(payload: &str, content: String) -> Result<Thought, Damaged> {
    if content.contains('\u{fffd}') {
        // The column may stand for a content with NULs, which the payload then holds
        // exactly: the payload's wins.
        let mut m = object(payload)?;
        m.entry("content")
            .or_insert(serde_json::Value::String(content));
        return typed(m);
    }
    WithMembers::new(payload, [Some(("content", Member::Text(content)))])
        .parse()
        .map_err(|e| Damaged(format!("a stored thought: {e}")))
}

/// A tool call from its payload and `args` / `result` columns.
pub(crate) fn call_from(
    payload: &str,
    args: &str,
    result: Option<&str>,
) -> Result<ToolCall, Damaged> {
    let result = result.map(|r| ("result", Member::Json(r)));
    WithMembers::new(payload, [Some(("args", Member::Json(args))), result])
        .parse()
        .map_err(|e| Damaged(format!("a stored tool call: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::tests::assert_kinds;
    use serde_json::json;

    /// The payload as the item's own JSON less `members`: what the views above must write.
    fn without(v: &impl Serialize, members: &[&str]) -> String {
        let mut m = match serde_json::to_value(v) {
            Ok(serde_json::Value::Object(m)) => m,
            other => panic!("not an object: {other:?}"),
        };
        for k in members {
            m.remove(*k);
        }
        json(&m)
    }

    fn thought(content: &str) -> Thought {
        serde_json::from_value(json!({
            "content": content, "created_at": "2026-01-05T10:00:02.257009Z", "id": "t-1",
            "type": "reasoning"
        }))
        .unwrap()
    }

    #[test]
    fn thought_payloads_are_the_thought_less_its_content() {
        let plain = thought("plain text, \"quoted\"\n");
        let mut full = thought("with every member");
        full.alternatives = vec![json!({"content": "an alternative"})];
        full.children = vec!["t-2".into()];
        full.confidence = Some(0.85);
        full.extensions.insert("x-old".into(), json!([1, 2]));
        full.metadata.insert("model".into(), json!("m"));
        full.parent_id = Some("t-0".into());
        full.reasoning = Some("because".into());
        for t in [&plain, &full] {
            let payload = thought_payload(t);
            assert_eq!(payload, without(t, &["content"]));
            assert_eq!(thought_from(&payload, t.content.clone()).unwrap(), *t);
        }
        let nul = thought("a\0b");
        let payload = thought_payload(&nul);
        assert_eq!(payload, without(&nul, &[]), "a NUL keeps the exact content");
        let column = text(&nul.content).into_owned();
        assert_eq!(thought_from(&payload, column).unwrap(), nul);
        let replacement = thought("a\u{fffd}b, as written");
        let payload = thought_payload(&replacement);
        assert_eq!(
            thought_from(&payload, replacement.content.clone()).unwrap(),
            replacement
        );
    }

    #[test]
    fn damaged_rows_fail_to_load_and_add_nothing() {
        let call: ToolCall = serde_json::from_value(json!({
            "args": {"q": "x"}, "id": "c-1", "status": "pending", "tool_id": "search"
        }))
        .unwrap();
        let payload = call_payload(&call);
        // A value that would add a member of its own if it were joined in as it stands.
        let smuggled = r#"{"q": "x"}, "extensions": {"x-added": 1}"#;
        assert!(call_from(&payload, smuggled, None).is_err());
        assert!(call_from(&payload, "{}", Some("1, \"success\": true")).is_err());
        assert!(call_from(&payload, "{", None).is_err());
        // A payload that holds a column's member too: a duplicate, not a silent choice.
        let with_args = without(&call, &[]);
        assert!(call_from(&with_args, "{}", None).is_err());
        assert!(call_from("[1]", "{}", None).is_err());
        assert!(
            call_from("{}", "{}", None).is_err(),
            "id, status, tool_id missing"
        );
        let t = thought("x");
        assert!(thought_from(&without(&t, &[]), "x".into()).is_err());
        assert!(thought_from("not json", "x".into()).is_err());
        assert!(thought_from(&thought_payload(&t), "x".into()).is_ok());
    }

    #[test]
    fn rows_give_values_of_the_kinds_they_declare() {
        let ctx = ItemContext {
            line_id: 1,
            seq: 2,
            execution_id: "exec",
            checkpoint_id: "ckpt",
        };
        let mut t = thought("x");
        assert_kinds(&NewThought::new(ctx, 0, &t));
        t.confidence = Some(0.5);
        t.parent_id = Some("t-0".into());
        assert_kinds(&NewThought::new(ctx, 1, &t));
        let pending: ToolCall = serde_json::from_value(json!({
            "args": {}, "id": "c-1", "status": "pending", "tool_id": "search"
        }))
        .unwrap();
        assert_kinds(&NewToolCall::new(ctx, 0, &pending));
        let done: ToolCall = serde_json::from_value(json!({
            "args": {}, "completed_at": "2026-01-05T10:00:03.000001Z", "error": "e", "id": "c-2",
            "result": 1, "started_at": "2026-01-05T10:00:02.000001Z", "status": "failed",
            "success": false, "tool_id": "search"
        }))
        .unwrap();
        assert_kinds(&NewToolCall::new(ctx, 1, &done));
        let step: CompletedStep = serde_json::from_value(json!({
            "completed_at": "2026-01-05T10:00:03.000001Z", "name": "plan"
        }))
        .unwrap();
        assert_kinds(&NewStep::new(ctx, 0, &step));
    }

    #[test]
    fn call_payloads_are_the_call_less_args_and_result() {
        let pending: ToolCall = serde_json::from_value(json!({
            "args": {"q": "x"}, "id": "c-1", "status": "pending", "tool_id": "search"
        }))
        .unwrap();
        let done: ToolCall = serde_json::from_value(json!({
            "args": [1, "two"], "completed_at": "2026-01-05T10:00:03.000001Z", "duration_ms": 12,
            "error": "e\0rr", "extensions": {"x": true}, "id": "c-2",
            "result": null, "started_at": "2026-01-05T10:00:02.000001Z", "status": "failed",
            "success": false, "tool_id": "http_get"
        }))
        .unwrap();
        for c in [&pending, &done] {
            let payload = call_payload(c);
            assert_eq!(payload, without(c, &["args", "result"]));
            let args = json(&c.args);
            let result = c.result.as_ref().map(json);
            assert_eq!(call_from(&payload, &args, result.as_deref()).unwrap(), *c);
        }
    }
}
