//! [`CheckpointManager`]: takes checkpoints of a [`RuntimeState`] and restores them.

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::format::{Checkpoint, CheckpointReason};
use crate::id::{CheckpointId, ExecutionId};
use crate::runtime::RuntimeState;
use crate::store::{CheckpointStore, ListFilter};
use std::sync::Arc;

/// Why and how to take a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointOptions {
    /// Why.
    pub reason: CheckpointReason,
    /// A human name.
    pub name: Option<String>,
    /// A longer description.
    pub description: Option<String>,
    /// Labels.
    pub labels: Vec<String>,
}

impl CheckpointOptions {
    /// Options with just a reason.
    pub fn new(reason: CheckpointReason) -> Self {
        Self {
            reason,
            name: None,
            description: None,
            labels: Vec::new(),
        }
    }

    /// Sets the name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.labels.push(label.into());
        self
    }
}

/// How to start a branch ([`CheckpointManager::fork`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForkOptions {
    /// The branch's name (the fork checkpoint's name).
    pub name: Option<String>,
    /// Why the branch was started.
    pub reason: Option<String>,
    /// Labels of the fork checkpoint.
    pub labels: Vec<String>,
    /// A new execution for the branch (default: the original's).
    pub execution: Option<ExecutionId>,
}

/// A restored execution.
#[derive(Debug)]
pub struct Restored {
    /// The state, ready to continue.
    pub state: RuntimeState,
    /// The checkpoint it came from.
    pub checkpoint: Checkpoint,
    /// The plan steps still to do.
    pub remaining_steps: Vec<String>,
    /// Newer checkpoints of the execution that could not be loaded (corrupted or unreadable),
    /// newest first, with the reason; restore fell back past them.
    pub skipped: Vec<(CheckpointId, String)>,
}

type IdSource = Arc<dyn Fn() -> CheckpointId + Send + Sync>;

/// Ties runtime state to a store.
pub struct CheckpointManager<S> {
    store: S,
    clock: Arc<dyn Clock>,
    ids: IdSource,
}

impl<S: CheckpointStore> CheckpointManager<S> {
    /// A manager over `store`, on the system clock, with UUIDv7 checkpoint ids.
    pub fn new(store: S) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
            ids: Arc::new(CheckpointId::generate),
        }
    }

    /// Uses `clock` for restored states.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses `ids` to name new checkpoints (for reproducible runs).
    pub fn with_id_source(
        mut self,
        ids: impl Fn() -> CheckpointId + Send + Sync + 'static,
    ) -> Self {
        self.ids = Arc::new(ids);
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The clock of restored states.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Takes a checkpoint of `state` and saves it. Its parent is the state's previous checkpoint
    /// (or the one it was restored from). Emits `CheckpointSaved` and clears the dirty set.
    pub fn checkpoint(
        &self,
        state: &mut RuntimeState,
        options: CheckpointOptions,
    ) -> Result<Checkpoint> {
        let mut checkpoint = Checkpoint::new(
            (self.ids)(),
            state.execution_id().clone(),
            state.agent_id(),
            state.clock().now(),
            options.reason,
        );
        checkpoint.parent_id = state.last_checkpoint().cloned();
        let md = &mut checkpoint.metadata;
        md.step_number = state.step_number();
        md.tokens_used = state.tokens_used();
        md.duration_ms = state.duration_ms();
        md.name = options.name;
        md.description = options.description;
        md.labels = options.labels;
        checkpoint.snapshot = state.snapshot().clone();
        self.store.save(&checkpoint)?;
        state.mark_checkpointed(&checkpoint);
        Ok(checkpoint)
    }

    /// Takes a checkpoint only if the state changed since its last one (see
    /// [`RuntimeState::dirty`]); `None` when nothing changed. For periodic capture.
    pub fn checkpoint_if_changed(
        &self,
        state: &mut RuntimeState,
        options: CheckpointOptions,
    ) -> Result<Option<Checkpoint>> {
        if state.dirty().is_clean() && state.last_checkpoint().is_some() {
            return Ok(None);
        }
        self.checkpoint(state, options).map(Some)
    }

    /// Starts a branch from checkpoint `id`: a new checkpoint with its state, `parent_id` = `id`,
    /// reason `branch`, the branch recorded in its metadata, in `id`'s execution or in
    /// `options.execution`. Restore it to continue the branch; the original line is unchanged.
    pub fn fork(&self, id: &CheckpointId, options: ForkOptions) -> Result<Checkpoint> {
        let from = self.store.load(id)?;
        let mut c = Checkpoint::new(
            (self.ids)(),
            options
                .execution
                .unwrap_or_else(|| from.execution_id.clone()),
            from.agent_id.clone(),
            self.clock.now(),
            CheckpointReason::Branch,
        );
        c.parent_id = Some(from.id.clone());
        c.snapshot = from.snapshot;
        let md = &mut c.metadata;
        md.step_number = from.metadata.step_number;
        md.tokens_used = from.metadata.tokens_used;
        md.duration_ms = from.metadata.duration_ms;
        md.agent_name = from.metadata.agent_name;
        md.name = options.name;
        md.labels = options.labels;
        md.branch = Some(crate::format::Branch {
            reason: options.reason,
        });
        self.store.save(&c)?;
        Ok(c)
    }

    fn restored(&self, checkpoint: Checkpoint, skipped: Vec<(CheckpointId, String)>) -> Restored {
        let state = RuntimeState::from_checkpoint(&checkpoint, self.clock.clone());
        Restored {
            remaining_steps: checkpoint.remaining_steps(),
            state,
            checkpoint,
            skipped,
        }
    }

    /// Restores a checkpoint by id.
    pub fn restore(&self, id: &CheckpointId) -> Result<Restored> {
        let checkpoint = self.store.load(id)?;
        Ok(self.restored(checkpoint, Vec::new()))
    }

    /// Restores the newest checkpoint of an execution that loads; a newer one that is corrupted
    /// is skipped (and reported in [`Restored::skipped`]) rather than failing the resume.
    pub fn restore_latest(&self, execution_id: &ExecutionId) -> Result<Restored> {
        let summaries = self.store.list(&ListFilter::execution(execution_id))?;
        let mut skipped = Vec::new();
        let mut last_error = None;
        for s in summaries {
            match self.store.load(&s.id) {
                Ok(c) => return Ok(self.restored(c, skipped)),
                Err(
                    e
                    @ (Error::Load { .. } | Error::NotRegularFile { .. } | Error::NotFound { .. }),
                ) => {
                    skipped.push((s.id.clone(), e.to_string()));
                    last_error = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or(Error::NotFound {
            what: "execution",
            id: execution_id.to_string(),
        }))
    }
}
