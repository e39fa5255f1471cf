//! What a run resumes from (seed 004's "Restored State"), for `caf resume` and the MCP tool
//! `checkpoint_resume`: [`restore_target`] finds it, [`ResumeView`] says where the run stands.

use crate::clock::Timestamp;
use crate::error::Error;
use crate::format::{CheckpointReason, JsonObject, LastError, PlanStep, ToolCall};
use crate::id::{CheckpointId, ExecutionId, IdError};
use crate::manager::{CheckpointManager, Chosen, Restored};
use crate::status::ExecutionStatus;
use crate::store::{CheckpointStore, ListFilter};
use serde::Serialize;

/// Why there is nothing to resume from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The target is neither a valid execution id with checkpoints nor a valid checkpoint id.
    #[error("{target:?}: not a valid checkpoint id: {error}")]
    BadId {
        /// The target as given.
        target: String,
        /// Why it is not an id.
        error: IdError,
    },
    /// No execution with checkpoints, and no checkpoint, has this id.
    #[error("{0}: no execution or checkpoint with this id")]
    NotFound(String),
    /// The store failed, or no checkpoint of the execution could be loaded.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Restores what a run would resume from: for an execution id, its latest valid checkpoint
/// (falling back along the lineage past damaged ones, [`CheckpointManager::restore_latest`]);
/// otherwise the checkpoint with that id.
pub fn restore_target(store: &dyn CheckpointStore, target: &str) -> Result<Restored, ResumeError> {
    let manager = CheckpointManager::new(store);
    if let Ok(e) = ExecutionId::new(target) {
        let any = ListFilter {
            limit: Some(1),
            ..ListFilter::execution(&e)
        };
        if !store.list(&any)?.is_empty() {
            return Ok(manager.restore_latest(&e)?);
        }
    }
    let id = CheckpointId::new(target).map_err(|error| ResumeError::BadId {
        target: target.to_string(),
        error,
    })?;
    if store.summary(&id)?.is_none() {
        return Err(ResumeError::NotFound(target.to_string()));
    }
    Ok(manager.restore(&id)?)
}

/// What restore passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The checkpoint passed over.
    pub id: CheckpointId,
    /// Why it could not be used.
    pub error: String,
}

/// How far a run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ProgressView {
    /// Steps done (completed or skipped).
    pub done: usize,
    /// Steps in all.
    pub total: usize,
    /// `done` in percent of `total` (100 for an empty plan).
    pub percent: usize,
    /// The step number reached.
    pub step_number: u64,
}

/// Where a run stands at the checkpoint it would resume from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResumeView {
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// Its execution.
    pub execution_id: ExecutionId,
    /// Its agent.
    pub agent_id: String,
    /// The execution's status, from the checkpoint's reason.
    pub status: ExecutionStatus,
    /// Whether the run can resume (it is not completed).
    pub resumable: bool,
    /// When the checkpoint was taken.
    pub timestamp: Timestamp,
    /// Why.
    pub reason: CheckpointReason,
    /// Newer checkpoints passed over because they could not be loaded.
    pub skipped: Vec<Skipped>,
    /// Why the checkpoint is not the execution's newest, when it is not.
    pub chosen: Option<String>,
    /// Whether it was loaded from the database's copy because its file is damaged.
    pub from_database: bool,
    /// How far the run got.
    pub progress: ProgressView,
    /// The run's task.
    pub task: Option<String>,
    /// The names of the completed steps, in order.
    pub completed_steps: Vec<String>,
    /// The steps that remain.
    pub remaining_steps: Vec<String>,
    /// The structured plan (empty for a plan of names only).
    pub plan: Vec<PlanStep>,
    /// The last error.
    pub last_error: Option<LastError>,
    /// Tool calls started and not finished: to retry or reconcile.
    pub in_flight_tool_calls: Vec<ToolCall>,
    /// The context's variables.
    pub variables: JsonObject,
}

/// A sentence on which checkpoint a restore chose, unless it is the one asked for.
pub fn chosen_note(chosen: &Chosen) -> Option<String> {
    match chosen {
        Chosen::Requested => None,
        Chosen::Ancestor { head, generations } => Some(format!(
            "the newest checkpoint {head} is damaged: resuming from its ancestor {generations} generation(s) back"
        )),
        Chosen::NewestValid { head } => Some(format!(
            "the newest checkpoint {head} and its ancestors are damaged: resuming from the newest valid checkpoint of the execution, on another line"
        )),
    }
}

impl ResumeView {
    /// The view of a restored execution or checkpoint.
    pub fn of(r: &Restored) -> Self {
        let c = &r.checkpoint;
        let p = &c.snapshot.progress;
        let status = ExecutionStatus::from_reason(&c.metadata.checkpoint_reason);
        let (done, total) = p.steps_done_of_total();
        Self {
            checkpoint: c.id.clone(),
            execution_id: c.execution_id.clone(),
            agent_id: c.agent_id.clone(),
            status,
            resumable: status.is_resumable(),
            timestamp: c.timestamp,
            reason: c.metadata.checkpoint_reason.clone(),
            skipped: r
                .skipped
                .iter()
                .map(|(id, error)| Skipped {
                    id: id.clone(),
                    error: error.clone(),
                })
                .collect(),
            chosen: chosen_note(&r.chosen),
            from_database: !r.source.is_primary(),
            progress: ProgressView {
                done,
                total,
                percent: (done * 100).checked_div(total).unwrap_or(100),
                step_number: p.step_number,
            },
            task: p.task.clone(),
            completed_steps: p.completed_steps.iter().map(|s| s.name.clone()).collect(),
            remaining_steps: r.remaining_steps.clone(),
            plan: p.plan.clone(),
            last_error: p.last_error.clone(),
            in_flight_tool_calls: r
                .state
                .in_flight_tool_calls()
                .into_iter()
                .cloned()
                .collect(),
            variables: c.snapshot.context.variables.clone(),
        }
    }
}
