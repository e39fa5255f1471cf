//! Saving a checkpoint built from snapshot parts given as JSON: how agents written in other
//! languages checkpoint through caf (`caf save`, and the MCP tool `checkpoint_save`).
//!
//! The parts document is one JSON object; every member is optional:
//!
//! ```json
//! {
//!   "agent_id": "research-agent",
//!   "thought_chain": {"thoughts": [...]},
//!   "context": {"variables": {...}, "state": {}, "history": []},
//!   "tool_state": {"calls": [...], "results": {}},
//!   "progress": {"step_number": 3, "completed_steps": [...], "pending_steps": [...]},
//!   "metadata": {"tokens_used": 1200, "duration_ms": 5300, "agent_name": "...", "description": "..."}
//! }
//! ```
//!
//! Each section has the shape it has in a checkpoint file (docs/format.md); a section left out
//! is empty. The document is parsed strictly (duplicate keys refused), each section checked as
//! the format checks it, and any error names its JSON Pointer in the parts document; nothing is
//! written unless everything is valid.

use crate::clock::Timestamp;
use crate::error::Error;
use crate::format::{
    check, json::pointer_of, parse, Checkpoint, CheckpointReason, Context, EncodeError, Limits,
    Progress, ThoughtChain, ToolState,
};
use crate::id::{CheckpointId, ExecutionId};
use crate::retention::RetentionPolicy;
use crate::store::{CheckpointStore, ListFilter};
use serde::Deserialize;

/// The metadata a parts document may set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartsMetadata {
    #[serde(default)]
    tokens_used: u64,
    #[serde(default)]
    duration_ms: u64,
    #[serde(default)]
    agent_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// A parts document.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Parts {
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    thought_chain: ThoughtChain,
    #[serde(default)]
    context: Context,
    #[serde(default)]
    tool_state: ToolState,
    #[serde(default)]
    progress: Progress,
    #[serde(default)]
    metadata: PartsMetadata,
}

/// Which checkpoint the new one continues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Parent {
    /// The execution's latest checkpoint, if it has one (the usual case: the chain grows).
    #[default]
    Latest,
    /// None: the start of a new line.
    None,
    /// This one (e.g. a fork, to grow the branch).
    Id(CheckpointId),
}

/// What to save, besides the parts.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveRequest {
    /// The execution.
    pub execution_id: ExecutionId,
    /// The agent (else the parts' `agent_id`, else the parent's).
    pub agent_id: Option<String>,
    /// Why.
    pub reason: CheckpointReason,
    /// A name.
    pub name: Option<String>,
    /// A description (else the parts' `metadata.description`).
    pub description: Option<String>,
    /// Labels.
    pub labels: Vec<String>,
    /// Its parent.
    pub parent: Parent,
}

impl SaveRequest {
    /// A request for `execution_id` with reason `manual`, continuing the latest checkpoint.
    pub fn new(execution_id: ExecutionId) -> Self {
        Self {
            execution_id,
            agent_id: None,
            reason: CheckpointReason::Manual,
            name: None,
            description: None,
            labels: Vec::new(),
            parent: Parent::Latest,
        }
    }
}

/// Why nothing was saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// The parts are not valid: what is wrong, and where (a JSON Pointer into the parts, empty
    /// for the whole document).
    #[error("{}{message}", if pointer.is_empty() { String::new() } else { format!("at {pointer}: ") })]
    Invalid {
        /// Where.
        pointer: String,
        /// What.
        message: String,
    },
    /// No agent id was given, in the request, the parts or a parent.
    #[error("no agent id: give one (agent_id in the parts, or --agent)")]
    NoAgent,
    /// The parent named is not in the store.
    #[error("parent checkpoint {0} is not in the store")]
    NoParent(CheckpointId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}

fn invalid(pointer: String, message: impl Into<String>) -> SaveError {
    SaveError::Invalid {
        pointer,
        message: message.into(),
    }
}

/// Builds a checkpoint from `parts` (a JSON document, see the [module docs](self)) and the
/// request, validates it and saves it into `store`, with id `id` and time `now`.
pub fn save_parts(
    store: &dyn CheckpointStore,
    parts: &[u8],
    request: SaveRequest,
    id: CheckpointId,
    now: Timestamp,
) -> Result<Checkpoint, SaveError> {
    let started = std::time::Instant::now();
    let doc =
        parse(parts, &Limits::default()).map_err(|e| invalid(String::new(), e.to_string()))?;
    if !doc.is_object() {
        return Err(invalid(String::new(), "the parts must be a JSON object"));
    }
    let parts: Parts = serde_path_to_error::deserialize(&doc).map_err(|e| {
        let segments: Vec<String> = e
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
                serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                _ => None,
            })
            .collect();
        invalid(pointer_of(&segments), e.into_inner().to_string())
    })?;
    let parent = match request.parent {
        Parent::None => None,
        Parent::Id(p) => Some(
            store
                .summary(&p)?
                .ok_or_else(|| SaveError::NoParent(p.clone()))?,
        ),
        Parent::Latest => {
            let mut f = ListFilter::execution(&request.execution_id);
            f.limit = Some(1);
            store.list(&f)?.into_iter().next()
        }
    };
    let agent_id = request
        .agent_id
        .or(parts.agent_id)
        .or_else(|| parent.as_ref().map(|p| p.agent_id.clone()))
        .ok_or(SaveError::NoAgent)?;
    let mut c = Checkpoint::new(id, request.execution_id, agent_id, now, request.reason);
    c.parent_id = parent.map(|p| p.id);
    c.snapshot.thought_chain = parts.thought_chain;
    c.snapshot.context = parts.context;
    c.snapshot.tool_state = parts.tool_state;
    c.snapshot.progress = parts.progress;
    let md = &mut c.metadata;
    md.step_number = c.snapshot.progress.step_number;
    md.tokens_used = parts.metadata.tokens_used;
    md.duration_ms = parts.metadata.duration_ms;
    md.agent_name = parts.metadata.agent_name;
    md.description = request.description.or(parts.metadata.description);
    md.name = request.name;
    md.labels = request.labels;
    check(&c).map_err(|EncodeError::Invalid { pointer, message }| {
        // Pointers into the checkpoint, made pointers into the parts document.
        let pointer = match pointer.strip_prefix("/snapshot") {
            Some(rest) => rest.to_string(),
            None => pointer,
        };
        invalid(pointer, message)
    })?;
    let summary = store.save(&c)?;
    crate::metrics::saved(store, &c, &summary, started.elapsed());
    Ok(c)
}

/// A checkpoint saved by [`save_parts_and_prune`], and what pruning deleted after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    /// The checkpoint saved.
    pub checkpoint: Checkpoint,
    /// The checkpoints of its execution that the auto-prune deleted (empty without one).
    pub pruned: Vec<CheckpointId>,
}

/// [`save_parts`], then, when `auto_prune` is given (`DIR/caf.toml` sets `auto_prune`:
/// [`crate::config::RetentionConfig::auto_prune_policy`]), a prune of the new checkpoint's
/// execution by that policy ([`crate::prune::prune`]), as `caf save` and the MCP tool
/// `checkpoint_save` do. A failed prune is an error, but the checkpoint stays saved.
pub fn save_parts_and_prune(
    store: &dyn CheckpointStore,
    parts: &[u8],
    request: SaveRequest,
    id: CheckpointId,
    now: Timestamp,
    auto_prune: Option<&RetentionPolicy>,
) -> Result<Saved, SaveError> {
    let checkpoint = save_parts(store, parts, request, id, now)?;
    let pruned = match auto_prune {
        Some(policy) => {
            crate::prune::prune(store, policy, Some(&checkpoint.execution_id), now, false)?.deleted
        }
        None => Vec::new(),
    };
    Ok(Saved { checkpoint, pruned })
}
