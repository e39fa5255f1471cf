//! The seed-004 view of one checkpoint, for `caf inspect` and the MCP tool
//! `checkpoint_inspect`: who, when, why, where in its lineage, how far, at what cost, what it
//! holds, and its last thoughts and tool calls.

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::format::{
    encode, Checkpoint, CheckpointReason, JsonObject, Thought, ToolCall, ToolStatus,
    CURRENT_VERSION,
};
use crate::id::{CheckpointId, ExecutionId};
use crate::store::{CheckpointStore, FileStore, ListFilter};
use serde::Serialize;

/// How far the run got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InspectedProgress {
    /// The step number reached.
    pub step_number: u64,
    /// The plan's length, when known.
    pub total_steps: Option<u64>,
    /// `step_number` in percent of `total_steps`, when known.
    pub percent: Option<u64>,
    /// The steps that remain.
    pub remaining_steps: Vec<String>,
}

/// What the snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Thoughts.
    pub thoughts: usize,
    /// Tool calls.
    pub tool_calls: usize,
    /// Tool calls that failed.
    pub failed_tool_calls: usize,
    /// Context variables.
    pub variables: usize,
    /// Context messages.
    pub messages: usize,
}

/// How the checkpoint is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stored {
    /// The format version it is in now (the current one).
    pub version: String,
    /// The format version it was read in (older ones are migrated in memory).
    pub read_as: String,
    /// Its stored size in bytes.
    pub bytes: u64,
    /// Whether its integrity was checked (format 0.0.1 files carry none).
    pub integrity_checked: bool,
    /// Whether it was read from the database's copy because its file is damaged.
    pub from_database: bool,
}

impl Stored {
    /// A checkpoint read in format `read_as` (now in the current one), `bytes` in size, from
    /// the database's copy (`from_database`) because its file is damaged, or not.
    pub fn new(read_as: String, bytes: u64, from_database: bool) -> Self {
        Self {
            version: CURRENT_VERSION.to_string(),
            integrity_checked: integrity_checked(&read_as),
            read_as,
            bytes,
            from_database,
        }
    }
}

/// Loads checkpoint `id` of `store` to be inspected, with how it is stored. A store with files
/// (`files`) reads it from its file, to tell the format version it was written in; for a
/// damaged file (unreadable, or not a regular file) `database_copy` is asked for the
/// database's copy and its size, else the file's error is returned. A store without files
/// loads it, and its size is its encoding's.
pub fn load_stored(
    store: &dyn CheckpointStore,
    files: Option<&FileStore>,
    id: &CheckpointId,
    database_copy: impl FnOnce(&FileStore, &Error) -> Option<(Checkpoint, u64)>,
) -> Result<(Checkpoint, Stored)> {
    let Some(files) = files else {
        let c = store.load(id)?;
        let bytes = encode(&c).map_or(0, |b| b.len() as u64);
        return Ok((c, Stored::new(CURRENT_VERSION.to_string(), bytes, false)));
    };
    match files.load_decoded(id) {
        Ok(d) => {
            let bytes = std::fs::metadata(files.path_of(id)).map_or(0, |m| m.len());
            Ok((d.checkpoint, Stored::new(d.source_version, bytes, false)))
        }
        Err(e @ (Error::Load { .. } | Error::NotRegularFile { .. })) => {
            match database_copy(files, &e) {
                Some((c, bytes)) => Ok((c, Stored::new(CURRENT_VERSION.to_string(), bytes, true))),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The view of one checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    /// The checkpoint.
    pub id: CheckpointId,
    /// When it was taken.
    pub created: Timestamp,
    /// Its execution.
    pub execution_id: ExecutionId,
    /// Its agent.
    pub agent_id: String,
    /// The agent's display name.
    pub agent_name: Option<String>,
    /// Why it was taken.
    pub reason: CheckpointReason,
    /// Its name.
    pub name: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Its labels.
    pub labels: Vec<String>,
    /// Its parent (`None` for the first checkpoint of a line).
    pub parent_id: Option<CheckpointId>,
    /// Set when it starts a branch: why (possibly `None`, if no reason was given).
    pub branch: Option<Option<String>>,
    /// The checkpoints whose parent it is, oldest first, when the store is known.
    pub children: Option<Vec<CheckpointId>>,
    /// How far the run got.
    pub progress: InspectedProgress,
    /// Tokens used so far.
    pub tokens_used: u64,
    /// Milliseconds spent so far.
    pub duration_ms: u64,
    /// What the snapshot holds.
    pub counts: Counts,
    /// How it is stored.
    pub stored: Stored,
    /// The last thoughts, oldest first.
    pub last_thoughts: Vec<Thought>,
    /// The last tool calls, oldest first.
    pub last_tool_calls: Vec<ToolCall>,
    /// The context's variables.
    pub variables: JsonObject,
}

/// The last `n` items of a slice.
fn last<T: Clone>(items: &[std::sync::Arc<T>], n: usize) -> Vec<T> {
    items[items.len().saturating_sub(n)..]
        .iter()
        .map(|item| T::clone(item))
        .collect()
}

impl Inspection {
    /// The view of `c`, whose stored form is described by `stored`, with its `last` thoughts
    /// and tool calls, and its `children` when known ([`children`]).
    pub fn of(
        c: &Checkpoint,
        stored: Stored,
        last_n: usize,
        children: Option<Vec<CheckpointId>>,
    ) -> Self {
        let md = &c.metadata;
        let p = &c.snapshot.progress;
        let calls = &c.snapshot.tool_state.calls;
        Self {
            id: c.id.clone(),
            created: c.timestamp,
            execution_id: c.execution_id.clone(),
            agent_id: c.agent_id.clone(),
            agent_name: md.agent_name.clone(),
            reason: md.checkpoint_reason.clone(),
            name: md.name.clone(),
            description: md.description.clone(),
            labels: md.labels.clone(),
            parent_id: c.parent_id.clone(),
            branch: md.branch.as_ref().map(|b| b.reason.clone()),
            children,
            progress: InspectedProgress {
                step_number: p.step_number,
                total_steps: p.total_steps,
                percent: p
                    .total_steps
                    .map(|t| (p.step_number.min(t) * 100).checked_div(t).unwrap_or(100)),
                remaining_steps: p.pending_steps.clone(),
            },
            tokens_used: md.tokens_used,
            duration_ms: md.duration_ms,
            counts: Counts {
                thoughts: c.thought_count(),
                tool_calls: calls.len(),
                failed_tool_calls: calls
                    .iter()
                    .filter(|t| t.status == ToolStatus::Failed)
                    .count(),
                variables: c.snapshot.context.variables.len(),
                messages: c.snapshot.context.messages.len(),
            },
            stored,
            last_thoughts: last(&c.snapshot.thought_chain.thoughts, last_n),
            last_tool_calls: last(calls, last_n),
            variables: c.snapshot.context.variables.clone(),
        }
    }
}

/// Whether a checkpoint read in format `version` had its integrity checked (a format without
/// an integrity rule, 0.0.1, has none to check).
pub fn integrity_checked(version: &str) -> bool {
    use crate::format::versions::{find, Integrity};
    !matches!(find(version).map(|v| v.integrity), Some(Integrity::None))
}

/// The checkpoints of `store` whose parent is `c`, oldest first (its execution's only: a fork
/// into another execution names its parent too, but is that execution's).
pub fn children(store: &dyn CheckpointStore, c: &Checkpoint) -> Result<Vec<CheckpointId>> {
    let mut out: Vec<CheckpointId> = store
        .list(&ListFilter::execution(&c.execution_id))?
        .into_iter()
        .filter(|s| s.parent_id.as_ref() == Some(&c.id))
        .map(|s| s.id)
        .collect();
    out.reverse();
    Ok(out)
}
