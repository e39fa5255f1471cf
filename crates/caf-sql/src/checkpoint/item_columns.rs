//! Rows of the item tables (`thoughts`, `tool_calls`, `steps`) and their payloads.
//!
//! A payload is the item's exact JSON less the members a column already holds exactly: a
//! thought's `content` (unless it has a NUL, which the column cannot hold), a tool call's
//! `args` and `result` (JSON text columns). Reading an item back puts them together again.

use crate::checkpoint::checkpoint_row::Damaged;
use crate::columns::{count, json, text};
use crate::schema::{steps, thoughts, tool_calls};
use caf_core::format::{CompletedStep, JsonObject, Thought, ToolCall};
use diesel::prelude::*;
use serde::Serialize;
use std::borrow::Cow;

/// What every item row shares: where it is and which checkpoint first showed it.
#[derive(Debug, Clone)]
pub(crate) struct ItemContext {
    pub line_id: i64,
    pub seq: i64,
    pub execution_id: String,
    pub checkpoint_id: String,
}

/// A new `thoughts` row.
#[derive(Insertable)]
#[diesel(table_name = thoughts, treat_none_as_default_value = false)]
pub(crate) struct NewThought<'a> {
    line_id: i64,
    position: i64,
    from_seq: i64,
    execution_id: &'a str,
    id: Cow<'a, str>,
    first_checkpoint_id: &'a str,
    kind: Cow<'a, str>,
    content: Cow<'a, str>,
    confidence: Option<f64>,
    parent_id: Option<Cow<'a, str>>,
    created_at: i64,
    payload: String,
}

impl<'a> NewThought<'a> {
    pub fn new(ctx: &'a ItemContext, position: usize, t: &'a Thought) -> Self {
        Self {
            line_id: ctx.line_id,
            position: count(position),
            from_seq: ctx.seq,
            execution_id: &ctx.execution_id,
            id: text(&t.id),
            first_checkpoint_id: &ctx.checkpoint_id,
            kind: text(&t.kind),
            content: text(&t.content),
            confidence: t.confidence,
            parent_id: t.parent_id.as_deref().map(text),
            created_at: t.created_at.as_micros(),
            payload: thought_payload(t),
        }
    }
}

/// A new `tool_calls` row.
#[derive(Insertable)]
#[diesel(table_name = tool_calls, treat_none_as_default_value = false)]
pub(crate) struct NewToolCall<'a> {
    line_id: i64,
    position: i64,
    from_seq: i64,
    execution_id: &'a str,
    id: Cow<'a, str>,
    first_checkpoint_id: &'a str,
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
    pub fn new(ctx: &'a ItemContext, position: usize, c: &'a ToolCall) -> Self {
        Self {
            line_id: ctx.line_id,
            position: count(position),
            from_seq: ctx.seq,
            execution_id: &ctx.execution_id,
            id: text(&c.id),
            first_checkpoint_id: &ctx.checkpoint_id,
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

/// A new `steps` row.
#[derive(Insertable)]
#[diesel(table_name = steps, treat_none_as_default_value = false)]
pub(crate) struct NewStep<'a> {
    line_id: i64,
    position: i64,
    from_seq: i64,
    execution_id: &'a str,
    first_checkpoint_id: &'a str,
    name: Cow<'a, str>,
    completed_at: i64,
    payload: String,
}

impl<'a> NewStep<'a> {
    pub fn new(ctx: &'a ItemContext, position: usize, s: &'a CompletedStep) -> Self {
        Self {
            line_id: ctx.line_id,
            position: count(position),
            from_seq: ctx.seq,
            execution_id: &ctx.execution_id,
            first_checkpoint_id: &ctx.checkpoint_id,
            name: text(&s.name),
            completed_at: s.completed_at.as_micros(),
            payload: json(s),
        }
    }
}

/// `v` as a JSON object without `members`.
fn without(v: &impl Serialize, members: &[&str]) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::Object(mut m)) => {
            for k in members {
                m.remove(*k);
            }
            json(&m)
        }
        _ => json(v),
    }
}

/// A thought's payload: its JSON, without `content` when the column holds it exactly.
fn thought_payload(t: &Thought) -> String {
    if t.content.contains('\0') {
        json(t)
    } else {
        without(t, &["content"])
    }
}

/// A tool call's payload: its JSON without `args` and `result` (held by their columns).
fn call_payload(c: &ToolCall) -> String {
    without(c, &["args", "result"])
}

fn object(payload: &str) -> Result<JsonObject, Damaged> {
    serde_json::from_str(payload).map_err(|e| Damaged(format!("a stored payload: {e}")))
}

fn typed<T: serde::de::DeserializeOwned>(m: JsonObject) -> Result<T, Damaged> {
    T::deserialize(serde_json::Value::Object(m)).map_err(|e| Damaged(e.to_string()))
}

/// A thought from its payload and `content` column.
pub(crate) fn thought_from(payload: &str, content: String) -> Result<Thought, Damaged> {
    let mut m = object(payload)?;
    m.entry("content")
        .or_insert(serde_json::Value::String(content));
    typed(m)
}

/// A tool call from its payload and `args` / `result` columns.
pub(crate) fn call_from(
    payload: &str,
    args: &str,
    result: Option<&str>,
) -> Result<ToolCall, Damaged> {
    let mut m = object(payload)?;
    let value = |s: &str| {
        serde_json::from_str::<serde_json::Value>(s)
            .map_err(|e| Damaged(format!("a stored tool call value: {e}")))
    };
    m.insert("args".into(), value(args)?);
    if let Some(r) = result {
        m.insert("result".into(), value(r)?);
    }
    typed(m)
}
