//! The `checkpoints` row of a checkpoint (and the columns a listing reads): its header in
//! normalized columns, and the conversion of a [`Checkpoint`] to that row and back.
//!
//! Normalized columns are for querying. A few values cannot be held by a column exactly — a NUL
//! character (PostgreSQL `text` refuses it; it becomes U+FFFD on both backends, so that queries
//! behave the same) or a counter above `i64::MAX` (saturated) — and those are kept exactly in the
//! `exact` JSON column, so that a checkpoint always loads back equal to what was saved. Items keep
//! their exact JSON in `payload`, less the members a column already holds exactly (a thought's
//! `content`, unless it has a NUL; a tool call's `args` and `result`, which are JSON text); the
//! rest of the document is the `rest` JSON column.

use crate::checkpoint::entry_revisions::Parts;
use crate::columns::{count, int, json, text, uint};
use crate::connection::AnyConnection;
use crate::schema::checkpoints;
use crate::statement::fixed::{execute, load};
use crate::statement::{shape, Param};
use caf_core::format::{
    Branch, Checkpoint, CheckpointReason, CompletedStep, Context, JsonObject, LastError, Metadata,
    PlanStep, Progress, Snapshot, Thought, ThoughtChain, ToolCall, ToolState,
};
use caf_core::{CheckpointId, CheckpointSummary, ExecutionId, Timestamp};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The values whose column could not hold them exactly.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Exact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_number: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ms: Option<u64>,
}

impl Exact {
    fn of(c: &Checkpoint) -> Option<String> {
        let m = &c.metadata;
        let big = |u: u64| (u > i64::MAX as u64).then_some(u);
        let e = Self {
            agent_id: c.agent_id.contains('\0').then(|| c.agent_id.clone()),
            name: m.name.clone().filter(|n| n.contains('\0')),
            step_number: big(m.step_number),
            tokens_used: big(m.tokens_used),
            duration_ms: big(m.duration_ms),
        };
        let needed = e.agent_id.is_some()
            || e.name.is_some()
            || e.step_number.is_some()
            || e.tokens_used.is_some()
            || e.duration_ms.is_some();
        needed.then(|| json(&e))
    }
}

/// Everything of a checkpoint that no column, item or entry holds, as written; with the
/// number of entries of each part (to check what is read back).
#[derive(Serialize)]
struct RestOut<'a> {
    #[serde(rename = "$schema")]
    schema: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_thought_id: Option<&'a str>,
    #[serde(skip_serializing_if = "is_empty")]
    extensions: &'a JsonObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_call_id: Option<&'a str>,
    metadata: MetaOut<'a>,
    parts: BTreeMap<&'static str, u64>,
    progress: ProgressOut<'a>,
}

fn is_empty(m: &&JsonObject) -> bool {
    m.is_empty()
}

#[derive(Serialize)]
struct MetaOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<&'a Branch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "is_empty")]
    extensions: &'a JsonObject,
}

#[derive(Serialize)]
struct ProgressOut<'a> {
    iterations_completed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<&'a LastError>,
    #[serde(skip_serializing_if = "<[PlanStep]>::is_empty")]
    plan: &'a [PlanStep],
    step_number: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_steps: Option<u64>,
}

/// [`RestOut`], read back.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RestIn {
    #[serde(rename = "$schema")]
    schema: String,
    #[serde(default)]
    current_thought_id: Option<String>,
    #[serde(default)]
    extensions: JsonObject,
    #[serde(default)]
    last_call_id: Option<String>,
    metadata: MetaIn,
    /// Entries per part.
    pub parts: BTreeMap<String, u64>,
    progress: ProgressIn,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetaIn {
    #[serde(default)]
    agent_name: Option<String>,
    #[serde(default)]
    branch: Option<Branch>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    extensions: JsonObject,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProgressIn {
    iterations_completed: u64,
    #[serde(default)]
    last_error: Option<LastError>,
    #[serde(default)]
    plan: Vec<PlanStep>,
    step_number: u64,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    total_steps: Option<u64>,
}

fn rest_of(c: &Checkpoint) -> String {
    let s = &c.snapshot;
    json(&RestOut {
        schema: &c.schema,
        current_thought_id: s.thought_chain.current_thought_id.as_deref(),
        extensions: &c.extensions,
        last_call_id: s.tool_state.last_call_id.as_deref(),
        metadata: MetaOut {
            agent_name: c.metadata.agent_name.as_deref(),
            branch: c.metadata.branch.as_ref(),
            description: c.metadata.description.as_deref(),
            extensions: &c.metadata.extensions,
        },
        parts: crate::checkpoint::entry_revisions::counts(s),
        progress: ProgressOut {
            iterations_completed: s.progress.iterations_completed,
            last_error: s.progress.last_error.as_ref(),
            plan: &s.progress.plan,
            step_number: s.progress.step_number,
            task: s.progress.task.as_deref(),
            total_steps: s.progress.total_steps,
        },
    })
}

/// The task of an execution as a checkpoint tells it: `progress.task`, else
/// `context.variables.task` when a string.
pub(crate) fn task_of(c: &Checkpoint) -> String {
    if let Some(task) = &c.snapshot.progress.task {
        return text(task).into_owned();
    }
    match c.snapshot.context.variables.get("task") {
        Some(serde_json::Value::String(s)) => text(s).into_owned(),
        _ => String::new(),
    }
}

/// `progress.task` of a stored `rest` column, if it has one.
pub(crate) fn task_in_rest(rest: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(rest).ok()?;
    v.pointer("/progress/task")
        .and_then(serde_json::Value::as_str)
        .map(|t| text(t).into_owned())
}

/// A `checkpoints` row.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = checkpoints)]
pub(crate) struct CheckpointRow {
    pub id: String,
    pub parent_id: Option<String>,
    pub execution_id: String,
    pub agent_id: String,
    pub timestamp: i64,
    pub version: String,
    pub step_number: i64,
    pub reason: String,
    pub tokens_used: i64,
    pub duration_ms: i64,
    pub name: Option<String>,
    pub labels: String,
    pub integrity: String,
    pub bytes: i64,
    pub line_id: i64,
    pub seq: i64,
    pub thought_count: i64,
    pub call_count: i64,
    pub step_count: i64,
    pub exact: Option<String>,
    pub rest: String,
}

/// The columns of `checkpoints`, in the order [`CheckpointRow::values`] gives them.
macro_rules! checkpoint_columns {
    () => {
        "INSERT INTO checkpoints (id, parent_id, execution_id, agent_id, \"timestamp\", version, \
         step_number, reason, tokens_used, duration_ms, name, labels, integrity, bytes, line_id, \
         seq, thought_count, call_count, step_count, exact, rest) "
    };
}

shape!(
    /// Inserts a `checkpoints` row.
    InsertCheckpoint,
    concat!(
        checkpoint_columns!(),
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
);

shape!(
    /// Whether a checkpoint may continue a line: the line is there and not sealed, the parent
    /// is at the seq before (`line`, `parent`, `line`, `seq`, `line`, `seq`), nothing comes
    /// after it, and no checkpoint has the new id (`id`). 1 if so, else 0.
    MayAppend,
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM lines WHERE id = ? AND NOT sealed) \
     AND EXISTS (SELECT 1 FROM checkpoints WHERE id = ? AND line_id = ? AND seq = ?) \
     AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE line_id = ? AND seq > ?) \
     AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE id = ?) \
     THEN CAST(1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS may"
);

/// The answer of [`MayAppend`].
#[derive(QueryableByName)]
struct May {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    may: i64,
}

/// The columns a listing reads.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = checkpoints)]
pub(crate) struct SummaryRow {
    pub id: String,
    pub parent_id: Option<String>,
    pub execution_id: String,
    pub agent_id: String,
    pub timestamp: i64,
    pub step_number: i64,
    pub reason: String,
    pub tokens_used: i64,
    pub name: Option<String>,
    pub labels: String,
    pub bytes: i64,
    pub exact: Option<String>,
}

/// Where a checkpoint sits: its line and sequence number there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    pub line_id: i64,
    pub seq: i64,
}

/// A stored value that does not decode.
#[derive(Debug)]
pub(crate) struct Damaged(pub String);

impl CheckpointRow {
    /// The row of `c`, placed at `place`, whose encoding has `integrity` and `bytes`.
    pub fn of(c: &Checkpoint, place: Place, integrity: &str, bytes: u64) -> Self {
        let m = &c.metadata;
        let s = &c.snapshot;
        Self {
            id: c.id.to_string(),
            parent_id: c.parent_id.as_ref().map(|p| p.to_string()),
            execution_id: c.execution_id.to_string(),
            agent_id: text(&c.agent_id).into_owned(),
            timestamp: c.timestamp.as_micros(),
            version: c.version.clone(),
            step_number: int(m.step_number),
            reason: m.checkpoint_reason.as_str().to_string(),
            tokens_used: int(m.tokens_used),
            duration_ms: int(m.duration_ms),
            name: m.name.as_deref().map(|n| text(n).into_owned()),
            labels: json(&m.labels),
            integrity: integrity.to_string(),
            bytes: int(bytes),
            line_id: place.line_id,
            seq: place.seq,
            thought_count: count(s.thought_chain.thoughts.len()),
            call_count: count(s.tool_state.calls.len()),
            step_count: count(s.progress.completed_steps.len()),
            exact: Exact::of(c),
            rest: rest_of(c),
        }
    }

    /// The row's values, in the order of [`InsertCheckpoint`]'s columns.
    pub fn values(&self) -> [Param<'_>; 21] {
        [
            Param::Text(&self.id),
            Param::OptText(self.parent_id.as_deref()),
            Param::Text(&self.execution_id),
            Param::Text(&self.agent_id),
            Param::Int(self.timestamp),
            Param::Text(&self.version),
            Param::Int(self.step_number),
            Param::Text(&self.reason),
            Param::Int(self.tokens_used),
            Param::Int(self.duration_ms),
            Param::OptText(self.name.as_deref()),
            Param::Text(&self.labels),
            Param::Text(&self.integrity),
            Param::Int(self.bytes),
            Param::Int(self.line_id),
            Param::Int(self.seq),
            Param::Int(self.thought_count),
            Param::Int(self.call_count),
            Param::Int(self.step_count),
            Param::OptText(self.exact.as_deref()),
            Param::Text(&self.rest),
        ]
    }

    /// Inserts the row.
    pub fn insert(&self, conn: &mut AnyConnection) -> QueryResult<()> {
        execute::<InsertCheckpoint>(conn, &self.values()).map(|_| ())
    }

    /// Inserts the row if checkpoint `parent`, at `parent_place`, is still the tip of the line
    /// this row continues (see [`MayAppend`]); `false` if it is not, or if a row with this id
    /// exists: nothing was written then.
    ///
    /// The question comes first and the row goes in with a plain `VALUES` statement: SQLite
    /// keeps a statement journal for an `INSERT … SELECT` (it may write several rows), a copy
    /// of every page the statement changes, spilled to a temporary file past 64 KiB — more
    /// than the question costs. (PostgreSQL asks within its one-statement save,
    /// [`crate::checkpoint::append_pg`].)
    pub fn append(
        &self,
        conn: &mut AnyConnection,
        parent: &str,
        parent_place: Place,
    ) -> QueryResult<bool> {
        let (line, seq) = (parent_place.line_id, parent_place.seq);
        let question = [
            Param::Int(line),
            Param::Text(parent),
            Param::Int(line),
            Param::Int(seq),
            Param::Int(line),
            Param::Int(seq),
            Param::Text(&self.id),
        ];
        let may: Vec<May> = load::<MayAppend, _>(conn, &question)?;
        if may.first().map(|m| m.may) != Some(1) {
            return Ok(false);
        }
        self.insert(conn)?;
        Ok(true)
    }

    pub fn place(&self) -> Place {
        Place {
            line_id: self.line_id,
            seq: self.seq,
        }
    }

    /// The `rest` column, decoded.
    pub fn rest(&self) -> Result<RestIn, Damaged> {
        serde_json::from_str(&self.rest).map_err(|e| Damaged(e.to_string()))
    }

    /// The checkpoint, given its `rest`, items and entries.
    pub fn into_checkpoint(
        self,
        rest: RestIn,
        thoughts: Vec<Arc<Thought>>,
        calls: Vec<Arc<ToolCall>>,
        completed_steps: Vec<CompletedStep>,
        parts: Parts,
    ) -> Result<Checkpoint, Damaged> {
        let exact = exact_of(self.exact.as_deref())?;
        let header = Header::new(
            &self.id,
            self.parent_id.as_deref(),
            &self.execution_id,
            &self.reason,
        )?;
        Ok(Checkpoint {
            schema: rest.schema,
            agent_id: exact.agent_id.unwrap_or(self.agent_id),
            execution_id: header.execution_id,
            extensions: rest.extensions,
            id: header.id,
            metadata: Metadata {
                agent_name: rest.metadata.agent_name,
                branch: rest.metadata.branch,
                checkpoint_reason: header.reason,
                description: rest.metadata.description,
                duration_ms: exact.duration_ms.unwrap_or(uint(self.duration_ms)),
                extensions: rest.metadata.extensions,
                labels: serde_json::from_str(&self.labels).map_err(|e| Damaged(e.to_string()))?,
                name: exact.name.or(self.name),
                step_number: exact.step_number.unwrap_or(uint(self.step_number)),
                tokens_used: exact.tokens_used.unwrap_or(uint(self.tokens_used)),
            },
            parent_id: header.parent_id,
            snapshot: Snapshot {
                context: Context {
                    history: parts.history,
                    memory: parts.memory,
                    messages: parts.messages,
                    state: parts.state,
                    variables: parts.variables,
                },
                progress: Progress {
                    completed_steps,
                    iterations_completed: rest.progress.iterations_completed,
                    last_error: rest.progress.last_error,
                    pending_steps: parts.pending_steps,
                    plan: rest.progress.plan,
                    step_number: rest.progress.step_number,
                    task: rest.progress.task,
                    total_steps: rest.progress.total_steps,
                },
                thought_chain: ThoughtChain {
                    current_thought_id: rest.current_thought_id,
                    thoughts,
                },
                tool_state: ToolState {
                    calls,
                    last_call_id: rest.last_call_id,
                    results: parts.results,
                },
            },
            timestamp: Timestamp::from_micros(self.timestamp),
            version: self.version,
        })
    }
}

fn exact_of(s: Option<&str>) -> Result<Exact, Damaged> {
    match s {
        None => Ok(Exact::default()),
        Some(s) => serde_json::from_str(s).map_err(|e| Damaged(e.to_string())),
    }
}

/// The typed ids and reason of a row.
struct Header {
    id: CheckpointId,
    parent_id: Option<CheckpointId>,
    execution_id: ExecutionId,
    reason: CheckpointReason,
}

impl Header {
    fn new(id: &str, parent: Option<&str>, execution: &str, reason: &str) -> Result<Self, Damaged> {
        let bad = |e: &dyn std::fmt::Display| Damaged(e.to_string());
        Ok(Self {
            id: CheckpointId::new(id).map_err(|e| bad(&e))?,
            parent_id: parent
                .map(CheckpointId::new)
                .transpose()
                .map_err(|e| bad(&e))?,
            execution_id: ExecutionId::new(execution).map_err(|e| bad(&e))?,
            reason: reason.parse().map_err(|e| bad(&e))?,
        })
    }
}

impl SummaryRow {
    /// The summary this row describes.
    pub fn into_summary(self) -> Result<CheckpointSummary, Damaged> {
        let exact = exact_of(self.exact.as_deref())?;
        let header = Header::new(
            &self.id,
            self.parent_id.as_deref(),
            &self.execution_id,
            &self.reason,
        )?;
        Ok(CheckpointSummary {
            id: header.id,
            parent_id: header.parent_id,
            execution_id: header.execution_id,
            agent_id: exact.agent_id.unwrap_or(self.agent_id),
            step_number: exact.step_number.unwrap_or(uint(self.step_number)),
            checkpoint_reason: header.reason,
            timestamp: Timestamp::from_micros(self.timestamp),
            tokens_used: exact.tokens_used.unwrap_or(uint(self.tokens_used)),
            name: exact.name.or(self.name),
            labels: serde_json::from_str(&self.labels).map_err(|e| Damaged(e.to_string()))?,
            bytes: uint(self.bytes),
        })
    }
}
