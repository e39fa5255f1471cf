//! Agent-aware diffs between two checkpoints: which thoughts and tool calls appeared, which
//! results arrived, what changed in the context (at JSON Pointer paths), how progress and cost
//! moved.
//!
//! ```
//! use caf_core::{diff, RuntimeState};
//! # use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, MemoryStore};
//! # let manager = CheckpointManager::new(MemoryStore::new());
//! let mut state = RuntimeState::new("agent");
//! state.set_variable("step", serde_json::json!(1));
//! # let opts = || CheckpointOptions::new(CheckpointReason::Manual);
//! let a = manager.checkpoint(&mut state, opts()).unwrap();
//! state.add_thought("reasoning", "look it up", Some(0.9));
//! state.set_variable("step", serde_json::json!(2));
//! let b = manager.checkpoint(&mut state, opts()).unwrap();
//!
//! let d = diff(&a, &b);
//! assert_eq!(d.thoughts_added.len(), 1);
//! assert_eq!(d.context_changes[0].path, "/variables/step");
//! assert!(diff(&b, &b).is_empty());
//! ```
//!
//! Both checkpoints are in the current format: loading migrates older files in memory (see
//! [`crate::format::decode`]), so checkpoints read from files of different format versions
//! diff like any others.
//!
//! Cost: equal parts are skipped with one `==` each, thoughts and tool calls are matched
//! through a hash map by id after skipping their common prefix, so a diff is linear in the
//! size of the checkpoints (two 1 MB checkpoints diff in well under a millisecond when equal);
//! `examples/diff_bench.rs` measures it.

mod deltas;
mod items;
mod text;
mod types;
mod walk;

pub use text::TEXT_DIFF_MIN_LINES;
pub use types::{
    Change, CheckpointDiff, Counter, FromTo, MetadataDelta, Op, PendingDelta, ProgressDelta,
    ThoughtChange, ToolCallChange, ToolCallCompletion,
};

use crate::format::Checkpoint;

/// The difference `a` → `b` (`a` is the older side, `from`; `b` the newer, `to`).
///
/// `diff(a, a)` is empty ([`CheckpointDiff::is_empty`]); so is the diff of two checkpoints
/// that differ only in their ids. See [`CheckpointDiff`] for what each section holds.
pub fn diff(a: &Checkpoint, b: &Checkpoint) -> CheckpointDiff {
    let (sa, sb) = (&a.snapshot, &b.snapshot);
    let (thoughts_added, thoughts_removed, thoughts_changed) =
        items::thoughts(&sa.thought_chain.thoughts, &sb.thought_chain.thoughts);
    let (tool_calls_added, tool_calls_completed, tool_calls_changed) =
        items::tool_calls(&sa.tool_state.calls, &sb.tool_state.calls);
    CheckpointDiff {
        from: a.id.clone(),
        to: b.id.clone(),
        thoughts_added,
        thoughts_removed,
        thoughts_changed,
        tool_calls_added,
        tool_calls_completed,
        tool_calls_changed,
        context_changes: deltas::context(&sa.context, &sb.context),
        progress: deltas::progress(&sa.progress, &sb.progress),
        metadata: deltas::metadata(a, b),
    }
}

/// Why a checkpoint's parent could not be had ([`parent_of`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParentError {
    /// The checkpoint has no parent: it starts a line.
    #[error("{0} is a root checkpoint (it has no parent)")]
    Root(crate::CheckpointId),
    /// Its parent is not in the store (pruned, deleted, or saved elsewhere).
    #[error("{id}: its parent {parent} is not in the store")]
    Missing {
        /// The checkpoint.
        id: crate::CheckpointId,
        /// Its parent.
        parent: crate::CheckpointId,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::Error),
}

/// The parent of `c` in `store`, to diff `c` against it (`caf diff ID`, the MCP tool
/// `checkpoint_diff`).
pub fn parent_of(
    store: &dyn crate::CheckpointStore,
    c: &Checkpoint,
) -> Result<Checkpoint, ParentError> {
    let Some(parent) = c.parent_id.clone() else {
        return Err(ParentError::Root(c.id.clone()));
    };
    match store.load(&parent) {
        Ok(p) => Ok(p),
        Err(crate::Error::NotFound { .. }) => Err(ParentError::Missing {
            id: c.id.clone(),
            parent,
        }),
        Err(e) => Err(e.into()),
    }
}
