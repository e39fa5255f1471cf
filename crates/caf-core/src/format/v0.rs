//! Format 0.0.1 and its migration to 1.0.0.
//!
//! 0.0.1 exists in two dialects, told apart by the shape of `snapshot.thought_chain`:
//!
//! - the example of the original design document ("seed"): the chain is an array of thoughts,
//!   the context is `{variables, state, history}`, the tool state `{calls, results}`;
//! - what the TypeScript CAF writes ("ts"): the chain is `{current_step_id, steps}`, the context
//!   `{messages, variables, memory}`, the tool state `{last_tool_call_id, pending, running,
//!   completed, failed}`, plus an optional `parent`, `name`, `description` and `diff`.
//!
//! Both use epoch-millisecond timestamps and have no integrity. The conversion keeps everything:
//! an unknown field goes to the `extensions` of the nearest 1.0.0 object that has one, or else to
//! the checkpoint's `extensions` under its JSON Pointer in the old document.

use super::error::LoadError;
use super::model::{is_snake_word, present, CheckpointReason, JsonObject, ToolStatus};
use super::v1_0_0::{
    Branch, Checkpoint, Context, Metadata, Progress, Snapshot, Thought, ThoughtChain, ToolCall,
    ToolState, SCHEMA_URL as SCHEMA_URL_1_0_0,
};
use crate::clock::Timestamp;
use crate::id::{CheckpointId, ExecutionId};
use serde::Deserialize;
use serde_json::{json, Value};

type Extra = JsonObject;

#[derive(Deserialize)]
struct Head {
    id: String,
    timestamp: i64,
    execution_id: String,
    agent_id: String,
}

// ---- the seed dialect -------------------------------------------------------------------------

#[derive(Deserialize)]
struct SeedSnapshot {
    thought_chain: Vec<SeedThought>,
    context: SeedContext,
    tool_state: SeedToolState,
    progress: SeedProgress,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct SeedThought {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    content: String,
    confidence: Option<f64>,
    parent_id: Option<String>,
    created_at: i64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct SeedContext {
    variables: JsonObject,
    state: JsonObject,
    history: Vec<Value>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct SeedToolState {
    calls: Vec<SeedToolCall>,
    results: JsonObject,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct SeedToolCall {
    id: String,
    tool_id: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    success: Option<bool>,
    error: Option<String>,
    started_at: Option<i64>,
    completed_at: Option<i64>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct SeedProgress {
    step_number: u64,
    total_thoughts: u64,
    total_tool_calls: u64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct SeedMetadata {
    step_number: u64,
    tokens_used: u64,
    duration_ms: f64,
    checkpoint_reason: String,
    #[serde(flatten)]
    extra: Extra,
}

// ---- the TypeScript dialect -------------------------------------------------------------------

#[derive(Deserialize)]
struct TsSnapshot {
    thought_chain: TsThoughtChain,
    context: TsContext,
    tool_state: TsToolState,
    progress: TsProgress,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsThoughtChain {
    current_step_id: Option<String>,
    steps: Vec<TsThought>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsThought {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    content: String,
    reasoning: Option<String>,
    confidence: f64,
    #[serde(default)]
    alternatives: Vec<Value>,
    parent_id: Option<String>,
    children: Vec<String>,
    #[serde(default)]
    metadata: JsonObject,
    timestamp: i64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsContext {
    messages: Vec<Value>,
    variables: JsonObject,
    #[serde(default)]
    memory: Vec<Value>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsToolState {
    last_tool_call_id: Option<String>,
    pending: Vec<String>,
    running: Vec<String>,
    completed: Vec<TsToolCall>,
    failed: Vec<TsToolCall>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsToolCall {
    id: String,
    tool_id: String,
    arguments: Value,
    status: String,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    error: Option<String>,
    duration_ms: Option<f64>,
    timestamp: i64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsProgress {
    step_number: u64,
    total_steps_estimate: Option<u64>,
    iterations_completed: u64,
    tokens_used: u64,
    duration_ms: f64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsMetadata {
    step_number: u64,
    total_steps_estimate: Option<u64>,
    tokens_used: u64,
    duration_ms: f64,
    checkpoint_reason: String,
    agent_name: Option<String>,
    agent_id: String,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct TsParent {
    checkpoint_id: String,
    is_branch: Option<bool>,
    branch_reason: Option<String>,
    #[serde(flatten)]
    extra: Extra,
}

// ---- conversion -------------------------------------------------------------------------------

fn invalid(pointer: &str, message: impl Into<String>) -> LoadError {
    LoadError::Invalid {
        pointer: pointer.to_string(),
        message: message.into(),
    }
}

fn part<T: for<'de> Deserialize<'de>>(doc: &mut Value, pointer: &str) -> Result<T, LoadError> {
    let v = doc
        .pointer_mut(pointer)
        .map(Value::take)
        .unwrap_or(Value::Null);
    serde_json::from_value(v).map_err(|e| invalid(pointer, e.to_string()))
}

/// Keeps unknown fields of the container at `pointer` in the checkpoint's extensions.
fn stash(ext: &mut JsonObject, pointer: &str, extra: Extra) {
    for (k, v) in extra {
        ext.insert(format!("{pointer}/{k}"), v);
    }
}

/// A number as the old document most likely wrote it: a whole value as an integer.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&x) {
        // Whole, non-negative and below 2^53: exact as an integer.
        json!(x as u64)
    } else {
        json!(x)
    }
}

/// Rounds a millisecond duration; a fractional value is also kept exactly in `ext`.
fn millis(ms: f64, ext: &mut JsonObject, key: &str) -> u64 {
    let rounded = ms.max(0.0).round();
    if rounded != ms {
        ext.insert(key.to_string(), json!(ms));
    }
    // A finite, non-negative, rounded f64: the cast saturates at u64::MAX.
    rounded as u64
}

/// Maps a 0.0.1 reason to a 1.0.0 reason; a renamed reason is kept in `ext` as `legacy_reason`.
fn reason(old: &str, ext: &mut JsonObject) -> CheckpointReason {
    let mapped = match old {
        "step_complete" => "step_completed",
        "tool_error" => "error",
        "auto" => "periodic",
        other => other,
    };
    if mapped != old || !is_snake_word(mapped) {
        ext.insert("legacy_reason".into(), json!(old));
    }
    CheckpointReason::try_from(mapped.to_string())
        .unwrap_or_else(|_| CheckpointReason::Other("legacy".into()))
}

fn ids(head: &Head) -> Result<(CheckpointId, ExecutionId), LoadError> {
    let id = CheckpointId::new(head.id.clone()).map_err(|e| invalid("/id", e.to_string()))?;
    let exec = ExecutionId::new(head.execution_id.clone())
        .map_err(|e| invalid("/execution_id", e.to_string()))?;
    Ok((id, exec))
}

fn seed_call(c: SeedToolCall) -> ToolCall {
    let status = match (c.success, c.completed_at) {
        (Some(true), _) => ToolStatus::Completed,
        (Some(false), _) => ToolStatus::Failed,
        (None, Some(_)) => ToolStatus::Completed,
        (None, None) => ToolStatus::Running,
    };
    let started_at = c.started_at.map(Timestamp::from_millis);
    let completed_at = c.completed_at.map(Timestamp::from_millis);
    let duration_ms = started_at
        .zip(completed_at)
        .map(|(s, e)| u64::try_from((e.as_micros() - s.as_micros()) / 1000).unwrap_or(0));
    ToolCall {
        id: c.id,
        tool_id: c.tool_id,
        args: c.args.unwrap_or_else(|| json!({})),
        status,
        result: c.result,
        success: c.success,
        error: c.error,
        started_at,
        completed_at,
        duration_ms,
        extensions: c.extra,
    }
}

fn from_seed(mut doc: Value, head: Head, mut ext: JsonObject) -> Result<Checkpoint, LoadError> {
    let snap: SeedSnapshot = part(&mut doc, "/snapshot")?;
    let md: SeedMetadata = part(&mut doc, "/metadata")?;
    let (id, execution_id) = ids(&head)?;
    stash(&mut ext, "/snapshot", snap.extra);
    stash(&mut ext, "/snapshot/context", snap.context.extra);
    stash(&mut ext, "/snapshot/tool_state", snap.tool_state.extra);
    stash(&mut ext, "/snapshot/progress", snap.progress.extra);
    let thoughts: Vec<Thought> = snap
        .thought_chain
        .into_iter()
        .map(|t| Thought {
            id: t.id,
            kind: t.kind,
            content: t.content,
            confidence: t.confidence,
            parent_id: t.parent_id,
            created_at: Timestamp::from_millis(t.created_at),
            reasoning: None,
            alternatives: Vec::new(),
            children: Vec::new(),
            metadata: JsonObject::new(),
            extensions: t.extra,
        })
        .collect();
    let calls: Vec<ToolCall> = snap.tool_state.calls.into_iter().map(seed_call).collect();
    // The counters are derivable; keep them only where they disagree with the content.
    if snap.progress.total_thoughts != thoughts.len() as u64 {
        ext.insert(
            "/snapshot/progress/total_thoughts".into(),
            json!(snap.progress.total_thoughts),
        );
    }
    if snap.progress.total_tool_calls != calls.len() as u64 {
        ext.insert(
            "/snapshot/progress/total_tool_calls".into(),
            json!(snap.progress.total_tool_calls),
        );
    }
    let mut md_ext = md.extra;
    let checkpoint_reason = reason(&md.checkpoint_reason, &mut md_ext);
    let duration_ms = millis(md.duration_ms, &mut md_ext, "duration_ms_exact");
    Ok(Checkpoint {
        schema: SCHEMA_URL_1_0_0.to_string(),
        version: "1.0.0".into(),
        id,
        parent_id: None,
        execution_id,
        agent_id: head.agent_id,
        timestamp: Timestamp::from_millis(head.timestamp),
        metadata: Metadata {
            step_number: md.step_number,
            tokens_used: md.tokens_used,
            duration_ms,
            checkpoint_reason,
            name: None,
            description: None,
            labels: Vec::new(),
            agent_name: None,
            branch: None,
            extensions: md_ext,
        },
        snapshot: Snapshot {
            thought_chain: ThoughtChain {
                current_thought_id: None,
                thoughts,
            },
            context: Context {
                variables: snap.context.variables,
                state: snap.context.state,
                history: snap.context.history,
                messages: Vec::new(),
                memory: Vec::new(),
            },
            tool_state: ToolState {
                calls,
                results: snap.tool_state.results,
                last_call_id: None,
            },
            progress: Progress {
                step_number: snap.progress.step_number,
                ..Progress::default()
            },
        },
        extensions: ext,
    })
}

fn ts_status(s: &str) -> ToolStatus {
    match s {
        "pending" => ToolStatus::Pending,
        "running" => ToolStatus::Running,
        "completed" => ToolStatus::Completed,
        "failed" => ToolStatus::Failed,
        _ => ToolStatus::Cancelled,
    }
}

fn ts_call(c: TsToolCall) -> ToolCall {
    let mut extensions = c.extra;
    let status = ts_status(&c.status);
    let started = Timestamp::from_millis(c.timestamp);
    let duration_ms = c
        .duration_ms
        .map(|d| millis(d, &mut extensions, "duration_ms_exact"));
    let completed_at = match (status.is_finished(), duration_ms) {
        (true, Some(d)) => Some(Timestamp::from_micros(
            started.as_micros().saturating_add(
                i64::try_from(d)
                    .unwrap_or(i64::MAX / 2)
                    .saturating_mul(1000),
            ),
        )),
        _ => None,
    };
    let success = match status {
        ToolStatus::Completed => Some(true),
        ToolStatus::Failed => Some(false),
        _ => None,
    };
    ToolCall {
        id: c.id,
        tool_id: c.tool_id,
        args: c.arguments,
        status,
        result: c.result,
        success,
        error: c.error,
        started_at: Some(started),
        completed_at,
        duration_ms,
        extensions,
    }
}

/// A call the TypeScript CAF recorded only by id (its pending and running lists).
fn id_only_call(id: String, status: ToolStatus) -> ToolCall {
    let mut extensions = JsonObject::new();
    extensions.insert("id_only".into(), json!(true));
    ToolCall {
        id,
        tool_id: "unknown".into(),
        args: json!({}),
        status,
        result: None,
        success: None,
        error: None,
        started_at: None,
        completed_at: None,
        duration_ms: None,
        extensions,
    }
}

fn from_ts(mut doc: Value, head: Head, mut ext: JsonObject) -> Result<Checkpoint, LoadError> {
    let snap: TsSnapshot = part(&mut doc, "/snapshot")?;
    let md: TsMetadata = part(&mut doc, "/metadata")?;
    let parent: Option<TsParent> = part(&mut doc, "/parent")?;
    let name: Option<String> = part(&mut doc, "/name")?;
    let description: Option<String> = part(&mut doc, "/description")?;
    if let Some(diff) = doc.get_mut("diff").map(Value::take) {
        ext.insert("diff".into(), diff);
    }
    let (id, execution_id) = ids(&head)?;
    stash(&mut ext, "/snapshot", snap.extra);
    stash(
        &mut ext,
        "/snapshot/thought_chain",
        snap.thought_chain.extra,
    );
    stash(&mut ext, "/snapshot/context", snap.context.extra);
    let mut ts = snap.tool_state;
    stash(
        &mut ext,
        "/snapshot/tool_state",
        std::mem::take(&mut ts.extra),
    );
    let mut progress = snap.progress;
    stash(
        &mut ext,
        "/snapshot/progress",
        std::mem::take(&mut progress.extra),
    );

    let thoughts = snap
        .thought_chain
        .steps
        .into_iter()
        .map(|t| Thought {
            id: t.id,
            kind: t.kind,
            content: t.content,
            confidence: Some(t.confidence),
            parent_id: t.parent_id,
            created_at: Timestamp::from_millis(t.timestamp),
            reasoning: t.reasoning,
            alternatives: t.alternatives,
            children: t.children,
            metadata: t.metadata,
            extensions: t.extra,
        })
        .collect();

    let mut calls: Vec<ToolCall> = ts
        .completed
        .into_iter()
        .chain(ts.failed)
        .map(ts_call)
        .collect();
    calls.sort_by_key(|c| c.started_at);
    calls.extend(
        ts.running
            .into_iter()
            .map(|id| id_only_call(id, ToolStatus::Running)),
    );
    calls.extend(
        ts.pending
            .into_iter()
            .map(|id| id_only_call(id, ToolStatus::Pending)),
    );
    let mut results = JsonObject::new();
    for c in calls.iter().filter(|c| c.status == ToolStatus::Completed) {
        if let Some(r) = &c.result {
            results.insert(c.tool_id.clone(), r.clone());
        }
    }

    let mut md_ext = md.extra;
    let checkpoint_reason = reason(&md.checkpoint_reason, &mut md_ext);
    let duration_ms = millis(md.duration_ms, &mut md_ext, "duration_ms_exact");
    if md.agent_id != head.agent_id {
        md_ext.insert("agent_id".into(), json!(md.agent_id));
    }
    if md.total_steps_estimate != progress.total_steps_estimate {
        md_ext.insert(
            "total_steps_estimate".into(),
            json!(md.total_steps_estimate),
        );
    }
    // Progress repeats metadata's counters; keep them only where they differ.
    let p = &progress;
    if p.tokens_used != md.tokens_used {
        ext.insert(
            "/snapshot/progress/tokens_used".into(),
            json!(p.tokens_used),
        );
    }
    if p.duration_ms != md.duration_ms {
        ext.insert(
            "/snapshot/progress/duration_ms".into(),
            number(p.duration_ms),
        );
    }
    if p.step_number != md.step_number {
        md_ext.insert("step_number".into(), json!(md.step_number));
    }

    let (parent_id, branch) = match parent {
        None => (None, None),
        Some(p) => {
            stash(&mut ext, "/parent", p.extra);
            let parent_id = CheckpointId::new(p.checkpoint_id)
                .map_err(|e| invalid("/parent/checkpoint_id", e.to_string()))?;
            let branch = if p.is_branch == Some(true) {
                Some(Branch {
                    reason: p.branch_reason,
                })
            } else {
                if let Some(r) = p.branch_reason {
                    ext.insert("/parent/branch_reason".into(), json!(r));
                }
                if p.is_branch == Some(false) {
                    ext.insert("/parent/is_branch".into(), json!(false));
                }
                None
            };
            (Some(parent_id), branch)
        }
    };

    Ok(Checkpoint {
        schema: SCHEMA_URL_1_0_0.to_string(),
        version: "1.0.0".into(),
        id,
        parent_id,
        execution_id,
        agent_id: head.agent_id,
        timestamp: Timestamp::from_millis(head.timestamp),
        metadata: Metadata {
            step_number: progress.step_number,
            tokens_used: md.tokens_used,
            duration_ms,
            checkpoint_reason,
            name,
            description,
            labels: Vec::new(),
            agent_name: md.agent_name,
            branch,
            extensions: md_ext,
        },
        snapshot: Snapshot {
            thought_chain: ThoughtChain {
                current_thought_id: snap.thought_chain.current_step_id,
                thoughts,
            },
            context: Context {
                variables: snap.context.variables,
                state: JsonObject::new(),
                history: Vec::new(),
                messages: snap.context.messages,
                memory: snap.context.memory,
            },
            tool_state: ToolState {
                calls,
                results,
                last_call_id: ts.last_tool_call_id,
            },
            progress: Progress {
                step_number: progress.step_number,
                total_steps: progress.total_steps_estimate,
                iterations_completed: progress.iterations_completed,
                completed_steps: Vec::new(),
                pending_steps: Vec::new(),
            },
        },
        extensions: ext,
    })
}

const KNOWN_TOP: [&str; 11] = [
    "version",
    "id",
    "timestamp",
    "execution_id",
    "agent_id",
    "snapshot",
    "metadata",
    "parent",
    "name",
    "description",
    "diff",
];

/// The migration step 0.0.1 → 1.0.0 (either dialect), on a document that passed the 0.0.1 schema.
pub fn migrate_to_1_0_0(mut doc: Value) -> Result<Value, LoadError> {
    let head = Head::deserialize(&doc).map_err(|e| invalid("", e.to_string()))?;
    let seed = doc
        .pointer("/snapshot/thought_chain")
        .is_some_and(Value::is_array);
    // The seed dialect knows only the first seven top-level members.
    let known = if seed {
        &KNOWN_TOP[..7]
    } else {
        &KNOWN_TOP[..]
    };
    let mut ext = JsonObject::new();
    if let Value::Object(m) = &mut doc {
        let unknown: Vec<String> = m
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in unknown {
            if let Some(v) = m.remove(&k) {
                ext.insert(k, v);
            }
        }
    }
    let ckpt = if seed {
        from_seed(doc.take(), head, ext)?
    } else {
        from_ts(doc.take(), head, ext)?
    };
    // Refuse here, with a pointer, an epoch-millisecond time beyond the year 9999, which has no
    // RFC 3339 form; the rest is checked on the typed value at the end of the chain.
    super::v1_0_0::to_value(&ckpt)
}
