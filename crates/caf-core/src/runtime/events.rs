//! Events emitted by [`super::RuntimeState`] and the checkpoint manager.

use crate::format::CheckpointReason;
use crate::id::{CheckpointId, ExecutionId};

/// How the context changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextOp {
    /// A value was set (added or replaced).
    Set,
    /// A value was removed.
    Removed,
    /// An entry was appended to a list (history, messages, memory).
    Appended,
}

/// Something that happened to the runtime state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A thought was added to the chain.
    ThoughtCreated {
        /// Its id.
        thought_id: String,
        /// Its type.
        kind: String,
    },
    /// A tool call was requested or started.
    ToolCalled {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool_id: String,
    },
    /// A tool call finished.
    ToolCompleted {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool_id: String,
        /// Whether it succeeded.
        success: bool,
    },
    /// The context changed.
    ContextChanged {
        /// JSON Pointer into the context, e.g. `/variables/step`.
        path: String,
        /// What happened there.
        op: ContextOp,
    },
    /// A plan step was completed (or the step counter advanced).
    StepCompleted {
        /// The new step number.
        step_number: u64,
        /// The step's name, when it came from the plan.
        name: Option<String>,
    },
    /// A checkpoint of this state was saved.
    CheckpointSaved {
        /// The checkpoint.
        checkpoint_id: CheckpointId,
        /// Its execution.
        execution_id: ExecutionId,
        /// Why it was taken.
        reason: CheckpointReason,
    },
}
