//! The types of a checkpoint diff. Every type serializes to the JSON that `caf diff --json`
//! prints; the shape is documented on [`CheckpointDiff`].

use crate::format::{CheckpointReason, CompletedStep, Thought, ToolCall, ToolStatus};
use crate::id::CheckpointId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::format::present;

/// The difference between two checkpoints, `from` → `to`.
///
/// Serialized (for `caf diff --json`) it is an object with exactly these keys:
///
/// | key | shape |
/// |---|---|
/// | `from`, `to` | the two checkpoint ids |
/// | `thoughts_added` | `[Thought]`: whole thoughts of `to` whose id is not in `from`, in `to`'s order |
/// | `thoughts_removed` | `[Thought]`: whole thoughts of `from` whose id is not in `to` |
/// | `thoughts_changed` | `[{id, changes: [Change]}]`: thoughts in both that differ; change paths are relative to the thought (`/content`, `/confidence`, `/metadata/model`) |
/// | `tool_calls_added` | `[ToolCall]`: whole calls of `to` whose id is not in `from` |
/// | `tool_calls_completed` | `[{id, tool_id, status: {from, to}, result?, error?, changes: [Change]}]`: calls whose result arrived (see [`ToolCallCompletion`]) |
/// | `tool_calls_changed` | `[{id, tool_id, op, changes: [Change]}]`: every other change to a call; `op` is `changed`, or `removed` for a call of `from` missing from `to` |
/// | `context_changes` | `[Change]`: paths into the context (`/variables/step`, `/state/a/b/0`, `/history/3`, `/messages/2`, `/memory/0`) |
/// | `progress` | [`ProgressDelta`]: `step_number`, `total_steps`, `iterations_completed`, `steps_completed`, `steps_reverted`, `pending_steps?` |
/// | `metadata` | [`MetadataDelta`]: `tokens_used`, `duration_ms`, `reason`, `changes` (every other changed field, paths from the checkpoint's root) |
///
/// A [`Change`] is `{path, op, old?, new?, text_diff?}`.
///
/// Thoughts and tool calls are matched by id (the n-th occurrence of an id in `from` with the
/// n-th in `to`), so reordering alone is not a change. Arrays inside values are compared element
/// by element, by index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointDiff {
    /// The id of the older checkpoint (the left side).
    pub from: CheckpointId,
    /// The id of the newer checkpoint (the right side).
    pub to: CheckpointId,
    /// Thoughts only in `to`, whole, in `to`'s order.
    pub thoughts_added: Vec<Thought>,
    /// Thoughts only in `from`, whole, in `from`'s order.
    pub thoughts_removed: Vec<Thought>,
    /// Thoughts in both that differ, in `to`'s order.
    pub thoughts_changed: Vec<ThoughtChange>,
    /// Tool calls only in `to`, whole, in `to`'s order.
    pub tool_calls_added: Vec<ToolCall>,
    /// Tool calls whose result arrived between the two checkpoints.
    pub tool_calls_completed: Vec<ToolCallCompletion>,
    /// Other changes to tool calls: changed fields, and calls removed.
    pub tool_calls_changed: Vec<ToolCallChange>,
    /// Changes inside the context (variables, state, history, messages, memory).
    pub context_changes: Vec<Change>,
    /// How progress moved.
    pub progress: ProgressDelta,
    /// How the metadata (cost, reason, labels, …) and the rest of the checkpoint moved.
    pub metadata: MetadataDelta,
}

impl CheckpointDiff {
    /// Whether nothing differs between the two checkpoints (their ids aside).
    pub fn is_empty(&self) -> bool {
        self.thoughts_added.is_empty()
            && self.thoughts_removed.is_empty()
            && self.thoughts_changed.is_empty()
            && self.tool_calls_added.is_empty()
            && self.tool_calls_completed.is_empty()
            && self.tool_calls_changed.is_empty()
            && self.context_changes.is_empty()
            && self.progress.is_empty()
            && self.metadata.is_empty()
    }
}

/// What happened at a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// The place exists only on the `to` side.
    Added,
    /// The place exists only on the `from` side.
    Removed,
    /// The place exists on both sides with different values.
    Changed,
}

impl Op {
    /// `added`, `removed` or `changed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Removed => "removed",
            Self::Changed => "changed",
        }
    }
}

/// One change at one place of a JSON value: `{path, op, old?, new?, text_diff?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// A JSON Pointer (RFC 6901: `~` is written `~0` and `/` is written `~1`) relative to the
    /// object the change belongs to; `""` is the object itself.
    pub path: String,
    /// Added, removed or changed.
    pub op: Op,
    /// The value before; absent when `op` is `added` (`null` means the value was `null`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub old: Option<Value>,
    /// The value after; absent when `op` is `removed`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub new: Option<Value>,
    /// A unified line diff of `old` → `new`, when both are strings and one of them has at
    /// least [`super::TEXT_DIFF_MIN_LINES`] lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_diff: Option<String>,
}

/// A thought present in both checkpoints whose fields differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThoughtChange {
    /// The thought's id.
    pub id: String,
    /// What changed, with paths relative to the thought (`/content`, `/type`, `/confidence`).
    pub changes: Vec<Change>,
}

/// A tool call whose result arrived: its status went from `pending` or `running` to
/// `completed` or `failed`, or it had no result and now has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallCompletion {
    /// The call's id.
    pub id: String,
    /// Which tool (as in `to`).
    pub tool_id: String,
    /// The status before and after.
    pub status: FromTo<ToolStatus>,
    /// The result that arrived, if any (`null` is a result of `null`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Value>,
    /// The error message, for a call that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every field that changed (status and result included), paths relative to the call.
    pub changes: Vec<Change>,
}

/// Any other change to a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallChange {
    /// The call's id.
    pub id: String,
    /// Which tool (as in `to`, or as in `from` for a removed call).
    pub tool_id: String,
    /// `changed`, or `removed` for a call of `from` that is not in `to`.
    pub op: Op,
    /// What changed, paths relative to the call. A removed call has one change at `""` whose
    /// `old` is the whole call.
    pub changes: Vec<Change>,
}

/// A value before and after: `{from, to}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FromTo<T> {
    /// The value in the `from` checkpoint.
    pub from: T,
    /// The value in the `to` checkpoint.
    pub to: T,
}

impl<T: PartialEq> FromTo<T> {
    /// Whether the value moved.
    pub fn changed(&self) -> bool {
        self.from != self.to
    }
}

/// A counter before and after, and the difference: `{from, to, delta}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    /// The value in `from`.
    pub from: u64,
    /// The value in `to`.
    pub to: u64,
    /// `to - from` (saturated to the range of an `i64`).
    pub delta: i64,
}

impl Counter {
    /// The counter moving from `from` to `to`.
    pub fn new(from: u64, to: u64) -> Self {
        let delta = i128::from(to) - i128::from(from);
        let delta = i64::try_from(delta).unwrap_or(if delta < 0 { i64::MIN } else { i64::MAX });
        Self { from, to, delta }
    }

    /// Whether the counter moved.
    pub fn changed(&self) -> bool {
        self.from != self.to
    }
}

/// How progress moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressDelta {
    /// The step number.
    pub step_number: Counter,
    /// The total number of steps (`null` when unknown).
    pub total_steps: FromTo<Option<u64>>,
    /// Loop iterations completed.
    pub iterations_completed: Counter,
    /// Plan steps completed in between: in `to`'s completed steps and not in `from`'s.
    pub steps_completed: Vec<CompletedStep>,
    /// Plan steps completed in `from` but not in `to` (diffing backwards, or across branches).
    pub steps_reverted: Vec<CompletedStep>,
    /// The pending steps, when they differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_steps: Option<PendingDelta>,
}

impl ProgressDelta {
    /// Whether progress did not move at all.
    pub fn is_empty(&self) -> bool {
        !self.step_number.changed()
            && !self.total_steps.changed()
            && !self.iterations_completed.changed()
            && self.steps_completed.is_empty()
            && self.steps_reverted.is_empty()
            && self.pending_steps.is_none()
    }
}

/// The pending (remaining) steps before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingDelta {
    /// The pending steps of `from`.
    pub from: Vec<String>,
    /// The pending steps of `to`.
    pub to: Vec<String>,
    /// Steps pending in `to` but not in `from` (new plan steps), in `to`'s order.
    pub added: Vec<String>,
    /// Steps pending in `from` but not in `to` (usually: done), in `from`'s order.
    pub removed: Vec<String>,
}

/// How the metadata and the rest of the checkpoint moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataDelta {
    /// Tokens used (cumulative).
    pub tokens_used: Counter,
    /// Milliseconds since the execution started.
    pub duration_ms: Counter,
    /// The checkpoint reason.
    pub reason: FromTo<CheckpointReason>,
    /// Every other changed field of the checkpoint that no other section covers, with paths
    /// from the checkpoint's root: `/timestamp`, `/parent_id`, `/metadata/name`,
    /// `/metadata/labels/0`, `/snapshot/thought_chain/current_thought_id`,
    /// `/snapshot/tool_state/last_call_id`, `/snapshot/tool_state/results/search`, ….
    /// `/metadata/step_number` shows only when it moved differently from the progress step.
    pub changes: Vec<Change>,
}

impl MetadataDelta {
    /// Whether nothing in it moved.
    pub fn is_empty(&self) -> bool {
        !self.tokens_used.changed()
            && !self.duration_ms.changed()
            && !self.reason.changed()
            && self.changes.is_empty()
    }
}
