//! The typed checkpoint, format 1.0.0.
//!
//! These are plain data types: what one checkpoint file holds. Every field is documented in
//! `docs/format.md`; the JSON Schema is `schemas/checkpoint-1.0.0.schema.json`. Values that are the
//! agent's own data (variables, tool arguments and results, messages) are free-form JSON; the rest
//! is closed. Objects that the old format could extend carry an `extensions` object so that
//! nothing unknown is lost in a migration.

use crate::clock::Timestamp;
use crate::id::{CheckpointId, ExecutionId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// A free-form JSON object (keys are kept sorted, so output is deterministic).
pub type JsonObject = Map<String, Value>;

fn is_empty_object(m: &JsonObject) -> bool {
    m.is_empty()
}

pub(crate) use super::unique_keys::present;
use super::unique_keys::{object, value, values};

/// One self-contained checkpoint: who, when, why, and the whole runtime state.
///
/// Fields of every type in this module are declared in the alphabetical order of their JSON
/// names, so that serializing a value writes its keys sorted: the canonical order that the
/// integrity checksum is computed over (see [`crate::format::encode`]).
///
/// The integrity checksum is not a field: [`crate::format::encode`] computes it when the
/// checkpoint is written and [`crate::format::decode`] verifies it when it is read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// The URL of the JSON Schema the document conforms to.
    #[serde(rename = "$schema")]
    pub schema: String,
    /// The agent that ran the execution.
    pub agent_id: String,
    /// The execution (one run of an agent on a task) this checkpoint belongs to.
    pub execution_id: ExecutionId,
    /// Fields of an older format that have no place in this one, kept verbatim.
    #[serde(
        default,
        deserialize_with = "object",
        skip_serializing_if = "is_empty_object"
    )]
    pub extensions: JsonObject,
    /// This checkpoint's id.
    pub id: CheckpointId,
    /// Why, how far, and at what cost.
    pub metadata: Metadata,
    /// The previous checkpoint of the same execution (or the checkpoint this one was forked
    /// from), `null` for the first one.
    pub parent_id: Option<CheckpointId>,
    /// The four parts of the runtime state.
    pub snapshot: Snapshot,
    /// When the checkpoint was taken.
    pub timestamp: Timestamp,
    /// The format version (semver), `1.0.0` for this type.
    pub version: String,
}

/// Checkpoint metadata: progress counters, cost, the reason and human labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// The agent's display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// Set when this checkpoint starts a branch (a fork of its parent's execution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<Branch>,
    /// Why the checkpoint was taken.
    pub checkpoint_reason: CheckpointReason,
    /// A longer human description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Milliseconds since the execution started.
    pub duration_ms: u64,
    /// Free-form metadata: unknown metadata of an older format, kept verbatim, and caf's own
    /// members that no schema version has a field for (`redactions`: see
    /// [`Metadata::redactions`]).
    #[serde(
        default,
        deserialize_with = "object",
        skip_serializing_if = "is_empty_object"
    )]
    pub extensions: JsonObject,
    /// Free labels for filtering (`caf list --label`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// A human name, e.g. `before-refactor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The step the agent had reached (a copy of `snapshot.progress.step_number`).
    pub step_number: u64,
    /// Tokens used by the execution so far (cumulative).
    pub tokens_used: u64,
}

/// Branch information for a checkpoint that starts a fork.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Branch {
    /// Why the branch was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Why a checkpoint was taken. The list is open: any snake_case word is accepted and kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CheckpointReason {
    /// A thought was completed.
    ThoughtCompleted,
    /// A tool call finished.
    ToolExecuted,
    /// A plan step was completed.
    StepCompleted,
    /// The execution was paused (human in the loop).
    Paused,
    /// Someone asked for it.
    Manual,
    /// Something failed; the checkpoint allows a retry.
    Error,
    /// The execution finished.
    Completed,
    /// A timer fired.
    Periodic,
    /// The agent's confidence dropped below its threshold.
    LowConfidence,
    /// The agent made a decision worth marking.
    Decision,
    /// The execution branched.
    Branch,
    /// Another reason (snake_case).
    Other(String),
}

impl CheckpointReason {
    /// The reasons caf knows by name, in the order they are documented.
    pub const KNOWN: [&'static str; 11] = [
        "thought_completed",
        "tool_executed",
        "step_completed",
        "paused",
        "manual",
        "error",
        "completed",
        "periodic",
        "low_confidence",
        "decision",
        "branch",
    ];

    /// The reason as written in files.
    pub fn as_str(&self) -> &str {
        match self {
            Self::ThoughtCompleted => "thought_completed",
            Self::ToolExecuted => "tool_executed",
            Self::StepCompleted => "step_completed",
            Self::Paused => "paused",
            Self::Manual => "manual",
            Self::Error => "error",
            Self::Completed => "completed",
            Self::Periodic => "periodic",
            Self::LowConfidence => "low_confidence",
            Self::Decision => "decision",
            Self::Branch => "branch",
            Self::Other(s) => s,
        }
    }
}

/// A reason that is not a snake_case word of at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("checkpoint reason {0:?} is not a snake_case word (a-z, 0-9, _; at most 64 characters)")]
pub struct BadReason(pub String);

/// Whether `s` is a lower-case snake_case word of 1 to 64 characters starting with a letter.
pub fn is_snake_word(s: &str) -> bool {
    // Bytes rather than characters: a byte of a multi-byte character is never one of these.
    let b = s.as_bytes();
    matches!(b.first(), Some(b'a'..=b'z'))
        && b.len() <= 64
        && b.iter()
            .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

impl TryFrom<String> for CheckpointReason {
    type Error = BadReason;
    fn try_from(s: String) -> Result<Self, BadReason> {
        Ok(match s.as_str() {
            "thought_completed" => Self::ThoughtCompleted,
            "tool_executed" => Self::ToolExecuted,
            "step_completed" => Self::StepCompleted,
            "paused" => Self::Paused,
            "manual" => Self::Manual,
            "error" => Self::Error,
            "completed" => Self::Completed,
            "periodic" => Self::Periodic,
            "low_confidence" => Self::LowConfidence,
            "decision" => Self::Decision,
            "branch" => Self::Branch,
            _ if is_snake_word(&s) => Self::Other(s),
            _ => return Err(BadReason(s)),
        })
    }
}

impl std::str::FromStr for CheckpointReason {
    type Err = BadReason;
    fn from_str(s: &str) -> Result<Self, BadReason> {
        Self::try_from(s.to_string())
    }
}

impl From<CheckpointReason> for String {
    fn from(r: CheckpointReason) -> String {
        r.as_str().to_string()
    }
}

impl fmt::Display for CheckpointReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether two shared items (thoughts, tool calls) are the same: one allocation (a runtime
/// state shares each unchanged item with every checkpoint taken of it, and those with the
/// copies stores keep), or equal values. The first is a pointer comparison; the second compares
/// every field.
pub fn same<T: PartialEq>(a: &Arc<T>, b: &Arc<T>) -> bool {
    Arc::ptr_eq(a, b) || a == b
}

/// How many first items of `a` and `b` are the very same items (one allocation each, compared
/// by pointer): what a checkpoint shares with one taken before it of the same runtime state.
pub fn shared_prefix<T>(a: &[Arc<T>], b: &[Arc<T>]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(a, b)| Arc::ptr_eq(a, b))
        .count()
}

/// A list of shared items, each read into its own [`Arc`] (serde's own `Arc<T>` reads a `Box<T>`
/// first, then moves it into a second allocation).
fn shared<'de, D, T>(d: D) -> Result<Vec<Arc<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Items<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Items<T> {
        type Value = Vec<Arc<T>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            // The hint is the parser's guess; a hostile file does not make it allocate more.
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
            while let Some(item) = seq.next_element::<T>()? {
                items.push(Arc::new(item));
            }
            Ok(items)
        }
    }
    d.deserialize_seq(Items(std::marker::PhantomData))
}

/// The four parts of the runtime state, as stored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// What the agent knows.
    pub context: Context,
    /// How far the agent is, and what remains.
    pub progress: Progress,
    /// What the agent thought.
    pub thought_chain: ThoughtChain,
    /// What the agent did with tools.
    pub tool_state: ToolState,
}

/// The ordered chain of thoughts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThoughtChain {
    /// The thought the agent is on, if it tracks one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_thought_id: Option<String>,
    /// The thoughts, oldest first. Each is shared ([`Arc`]): a checkpoint taken of a runtime
    /// state shares every thought with it, and stores keep them without copying (an unchanged
    /// thought is known by its pointer, see [`same`]); change one with [`Arc::make_mut`],
    /// which copies it first if it is shared.
    #[serde(
        serialize_with = "super::encoder::thoughts",
        deserialize_with = "shared"
    )]
    pub thoughts: Vec<Arc<Thought>>,
}

/// One thought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thought {
    /// Options the agent considered and rejected (free-form objects).
    #[serde(
        default,
        deserialize_with = "values",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub alternatives: Vec<Value>,
    /// Ids of the thoughts that follow from this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    /// How sure the agent was, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The text of the thought.
    pub content: String,
    /// When the thought was created.
    pub created_at: Timestamp,
    /// Unknown fields of an older format, kept verbatim.
    #[serde(
        default,
        deserialize_with = "object",
        skip_serializing_if = "is_empty_object"
    )]
    pub extensions: JsonObject,
    /// Unique within the execution.
    pub id: String,
    /// Free-form data about the thought (model, token counts, …).
    #[serde(
        default,
        deserialize_with = "object",
        skip_serializing_if = "is_empty_object"
    )]
    pub metadata: JsonObject,
    /// The thought this one follows from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Why the agent thought it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// `reasoning`, `observation`, `action`, `planning`, `reflection`, `decision`, … (snake_case).
    #[serde(rename = "type")]
    pub kind: String,
}

/// The agent's working context.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// An append-only history of events or notes.
    #[serde(deserialize_with = "values")]
    pub history: Vec<Value>,
    /// Long-lived memory entries (`{key, value, importance, …}` objects).
    #[serde(
        default,
        deserialize_with = "values",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub memory: Vec<Value>,
    /// The conversation (`{role, content, …}` objects).
    #[serde(
        default,
        deserialize_with = "values",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub messages: Vec<Value>,
    /// Free-form structured state.
    #[serde(deserialize_with = "object")]
    pub state: JsonObject,
    /// Named variables.
    #[serde(deserialize_with = "object")]
    pub variables: JsonObject,
}

/// Tool calls and their results.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolState {
    /// Every call, in the order it was made. Shared as the thoughts are
    /// ([`ThoughtChain::thoughts`]).
    #[serde(
        serialize_with = "super::encoder::tool_calls",
        deserialize_with = "shared"
    )]
    pub calls: Vec<Arc<ToolCall>>,
    /// The id of the last call made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_call_id: Option<String>,
    /// The latest successful result of each tool, keyed by tool id.
    #[serde(deserialize_with = "object")]
    pub results: JsonObject,
}

/// Where a tool call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Requested, not started.
    Pending,
    /// Started, no result yet.
    Running,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Abandoned before it finished.
    Cancelled,
}

impl ToolStatus {
    /// The status as written in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the call has finished (completed, failed or cancelled).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The arguments (free-form).
    #[serde(deserialize_with = "value")]
    pub args: Value,
    /// When the call finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Timestamp>,
    /// How long the call took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The error message of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Unknown fields of an older format, kept verbatim.
    #[serde(
        default,
        deserialize_with = "object",
        skip_serializing_if = "is_empty_object"
    )]
    pub extensions: JsonObject,
    /// Unique within the execution.
    pub id: String,
    /// The result, once completed (`Some(null)` is a result of `null`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Value>,
    /// When the call started (absent while pending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// Where the call is in its life.
    pub status: ToolStatus,
    /// Whether the call succeeded, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Which tool was called.
    pub tool_id: String,
}

impl ToolCall {
    /// A call of `tool_id` with `args`, pending: not started, no result, no extensions.
    pub fn pending(id: impl Into<String>, tool_id: impl Into<String>, args: Value) -> Self {
        Self {
            id: id.into(),
            tool_id: tool_id.into(),
            args,
            status: ToolStatus::Pending,
            result: None,
            success: None,
            error: None,
            started_at: None,
            completed_at: None,
            duration_ms: None,
            extensions: JsonObject::new(),
        }
    }
}

/// The status of a plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Started, not finished (a crash leaves steps in this state).
    Running,
    /// Done.
    Completed,
    /// Failed (after its retries).
    Failed,
    /// Not to be run.
    Skipped,
}

impl StepStatus {
    /// The status as the format writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// Whether nothing remains to do for the step (completed or skipped).
    pub fn is_done(self) -> bool {
        matches!(self, Self::Completed | Self::Skipped)
    }
}

/// One step of the plan (1.1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does (a tool or routine name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// How many times it was started.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u64,
    /// When it finished (completed, failed or skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Timestamp>,
    /// The ids of the steps that must be done before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// What the step is for, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its id, unique in the plan.
    pub id: String,
    /// Its parameters.
    #[serde(
        default,
        deserialize_with = "object",
        skip_serializing_if = "is_empty_object"
    )]
    pub parameters: JsonObject,
    /// What it produced.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Value>,
    /// When it was last started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    /// Where it stands.
    pub status: StepStatus,
}

impl PlanStep {
    /// A pending step.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            action: None,
            attempts: 0,
            completed_at: None,
            dependencies: Vec::new(),
            description: None,
            error: None,
            id: id.into(),
            parameters: JsonObject::new(),
            result: None,
            started_at: None,
            status: StepStatus::Pending,
        }
    }
}

/// The last error of a run (1.1.0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LastError {
    /// When.
    pub at: Timestamp,
    /// What went wrong.
    pub message: String,
    /// The plan step that failed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Progress through the plan.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    /// The plan steps already done, in order.
    pub completed_steps: Vec<CompletedStep>,
    /// Loop iterations completed (agents that loop rather than follow a plan).
    #[serde(default)]
    pub iterations_completed: u64,
    /// The last error of the run, if a step failed (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
    /// The plan steps still to do, in order: the remaining steps on resume. With a `plan`, the
    /// ids of its steps not yet completed or skipped.
    pub pending_steps: Vec<String>,
    /// The plan (1.1.0): each step with its id, action, parameters, status and dependencies.
    /// When present it is the authority on what is done and what remains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanStep>,
    /// The number of steps done (the next step to run has this index).
    pub step_number: u64,
    /// The run's query or task, as given to the agent (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// How many steps the whole task has, or is estimated to have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_steps: Option<u64>,
}

/// A plan step that is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompletedStep {
    /// When it finished.
    pub completed_at: Timestamp,
    /// How long it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The step's name (as it stood in `pending_steps`).
    pub name: String,
    /// What the step produced (`Some(null)` is a result of `null`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Value>,
}

impl Metadata {
    /// Metadata with just a reason: counters at zero, no name, labels or extensions.
    pub fn new(checkpoint_reason: CheckpointReason) -> Self {
        Self {
            agent_name: None,
            branch: None,
            checkpoint_reason,
            description: None,
            duration_ms: 0,
            extensions: JsonObject::new(),
            labels: Vec::new(),
            name: None,
            step_number: 0,
            tokens_used: 0,
        }
    }

    /// How many values redaction replaced by `[REDACTED:kind]` markers when the checkpoint was
    /// saved (see [`crate::redact`]): the integer under [`REDACTIONS_KEY`] in
    /// [`extensions`](Self::extensions); 0 when it is absent (nothing was replaced) or is not
    /// a non-negative integer (an older format's member of that name, not caf's).
    pub fn redactions(&self) -> u64 {
        self.extensions
            .get(REDACTIONS_KEY)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    }

    /// Sets [`redactions`](Self::redactions): `extensions.redactions` is `n`, or absent when
    /// `n` is 0 (a checkpoint without secrets keeps the bytes it had).
    pub fn set_redactions(&mut self, n: u64) {
        if n == 0 {
            self.extensions.remove(REDACTIONS_KEY);
        } else {
            self.extensions.insert(REDACTIONS_KEY.into(), n.into());
        }
    }
}

/// The member of [`Metadata::extensions`] counting the values redacted when the checkpoint was
/// saved: an integer ≥ 1, absent when none was. A free-form extension rather than a schema
/// member, so that every published schema stays as it was released.
pub const REDACTIONS_KEY: &str = "redactions";

impl Progress {
    /// The steps done and the steps in all: from the structured plan when there is one (a step
    /// is done when completed or skipped), else from the completed and pending step names.
    pub fn steps_done_of_total(&self) -> (usize, usize) {
        if self.plan.is_empty() {
            let done = self.completed_steps.len();
            (done, done + self.pending_steps.len())
        } else {
            let done = self.plan.iter().filter(|s| s.status.is_done()).count();
            (done, self.plan.len())
        }
    }
}

impl Checkpoint {
    /// A checkpoint of the current format with an empty snapshot, no parent and metadata with
    /// just a reason; set the other fields as needed.
    pub fn new(
        id: CheckpointId,
        execution_id: ExecutionId,
        agent_id: impl Into<String>,
        timestamp: Timestamp,
        reason: CheckpointReason,
    ) -> Self {
        Self {
            schema: super::schema::SCHEMA_URL.to_string(),
            agent_id: agent_id.into(),
            execution_id,
            extensions: JsonObject::new(),
            id,
            metadata: Metadata::new(reason),
            parent_id: None,
            snapshot: Snapshot::default(),
            timestamp,
            version: super::CURRENT_VERSION.to_string(),
        }
    }

    /// The number of thoughts in the snapshot.
    pub fn thought_count(&self) -> usize {
        self.snapshot.thought_chain.thoughts.len()
    }

    /// The number of tool calls in the snapshot.
    pub fn tool_call_count(&self) -> usize {
        self.snapshot.tool_state.calls.len()
    }

    /// The plan steps that remain (a copy of `pending_steps`).
    pub fn remaining_steps(&self) -> Vec<String> {
        self.snapshot.progress.pending_steps.clone()
    }
}
