//! The arguments of each tool: typed structs whose JSON Schemas (with these doc comments as
//! descriptions) are the tools' input schemas. Unknown arguments are refused.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// `checkpoint_save`: save the agent's state as a checkpoint.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveArgs {
    /// The execution (one agent run) the checkpoint belongs to, e.g. `exec_research_1`; a
    /// session id works as well (also accepted as `session_id`). Ids use A-Z a-z 0-9 _ - . : @.
    #[serde(alias = "session_id")]
    pub execution_id: String,
    /// The state to save, as snapshot parts: an object with any of `agent_id`,
    /// `thought_chain` ({"thoughts": [...]}), `context` ({"variables": {}, "state": {},
    /// "history": []}), `tool_state` ({"calls": [...], "results": {}}), `progress`
    /// ({"step_number": 3, "completed_steps": [...], "pending_steps": [...]}) and `metadata`
    /// ({"tokens_used": 0, "duration_ms": 0}). A part left out is empty. Errors name their
    /// JSON Pointer in this object.
    pub state: Map<String, Value>,
    /// The agent (else `state.agent_id`, else the parent checkpoint's).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Why the checkpoint is taken: a snake_case word such as `auto`, `manual`, `error`,
    /// `step_completed`, `paused`, `completed`, `resumed` (default `manual`).
    #[serde(default)]
    pub reason: Option<String>,
    /// A short human name, e.g. `before-refactor`.
    #[serde(default)]
    pub name: Option<String>,
    /// A longer human description.
    #[serde(default)]
    pub description: Option<String>,
    /// Labels, for filtering (`keep` protects the checkpoint from pruning).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Its parent: a checkpoint id, or `none` to start a new line; default: the execution's
    /// latest checkpoint.
    #[serde(default)]
    pub parent: Option<String>,
}

/// `checkpoint_load`: load a checkpoint by id, or an execution's latest valid one.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadArgs {
    /// The checkpoint to load.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
    /// Instead: the execution whose latest valid checkpoint to load (damaged newer ones are
    /// skipped, falling back along the lineage); also accepted as `session_id`.
    #[serde(default, alias = "session_id")]
    pub execution_id: Option<String>,
}

/// `checkpoint_list`: checkpoints, newest first.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only this execution (also accepted as `session_id`).
    #[serde(default, alias = "session_id")]
    pub execution_id: Option<String>,
    /// Only this agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only this reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// Only checkpoints with this label.
    #[serde(default)]
    pub label: Option<String>,
    /// Only checkpoints older than this one: pass the `next_before` of the previous page.
    #[serde(default)]
    pub before: Option<String>,
    /// At most this many (default 50, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `checkpoint_inspect`: a readable view of one checkpoint.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectArgs {
    /// The checkpoint.
    pub checkpoint_id: String,
    /// How many of its last thoughts and tool calls to show (default 5).
    #[serde(default)]
    pub last: Option<usize>,
}

/// `checkpoint_diff`: what changed between two checkpoints.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// The newer side.
    pub checkpoint_id: String,
    /// The older side (default: the checkpoint's parent).
    #[serde(default)]
    pub from_id: Option<String>,
}

/// `checkpoint_resume`: what a run would resume from.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeArgs {
    /// An execution id (its latest valid checkpoint) or a checkpoint id.
    pub id: String,
}

/// `checkpoint_fork`: start a branch from a checkpoint.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkArgs {
    /// The checkpoint to branch from.
    pub checkpoint_id: String,
    /// The branch's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Why the branch is started.
    #[serde(default)]
    pub reason: Option<String>,
    /// Put the branch in a new execution with this id (default: the same execution).
    #[serde(default)]
    pub execution_id: Option<String>,
}

/// `checkpoint_delete`: delete checkpoints, or a whole execution.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArgs {
    /// The checkpoints to delete: all of them, or none if any is missing.
    #[serde(default)]
    pub checkpoint_ids: Vec<String>,
    /// Instead: delete every checkpoint of this execution.
    #[serde(default)]
    pub execution_id: Option<String>,
}

/// `checkpoint_prune`: delete old checkpoints by a retention policy.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneArgs {
    /// Keep the last N checkpoints of each execution.
    #[serde(default)]
    pub keep_last: Option<usize>,
    /// Delete checkpoints older than this, e.g. `30d`, `12h`.
    #[serde(default)]
    pub max_age: Option<String>,
    /// Thinning tiers `WITHIN:EVERY,...`, e.g. `1h:all,1d:1h,30d:1d`, or `none`.
    #[serde(default)]
    pub tiers: Option<String>,
    /// Only this execution.
    #[serde(default)]
    pub execution_id: Option<String>,
    /// Only say what would be deleted. Without `--allow-delete` on the server, every prune is
    /// a dry run.
    #[serde(default)]
    pub dry_run: Option<bool>,
}
