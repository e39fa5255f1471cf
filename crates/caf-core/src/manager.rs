//! [`CheckpointManager`]: takes checkpoints of a [`RuntimeState`] and restores them.

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::format::{Checkpoint, CheckpointReason};
use crate::id::{CheckpointId, ExecutionId};
use crate::runtime::RuntimeState;
use crate::store::{CheckpointStore, DamagedCheckpoint, ListFilter, LoadSource};
use std::collections::{HashMap, HashSet};
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
    /// Checkpoints restore passed over because they could not be loaded (damaged, unreadable,
    /// vanished), in the order tried, each with why: the execution's newest checkpoint and its
    /// ancestors, newest first; then, if none of those loads, the newer checkpoints of the
    /// execution tried on the way to the one restored (see [`Chosen::NewestValid`]).
    pub skipped: Vec<(CheckpointId, String)>,
    /// Where the checkpoint stands relative to the execution's newest one.
    pub chosen: Chosen,
    /// Which copy of the checkpoint was loaded: the store's own, or (in a store of files plus a
    /// database) the database's copy of a damaged file.
    pub source: LoadSource,
}

/// Which checkpoint a restore chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// The one asked for: the checkpoint given to [`CheckpointManager::restore`], or the
    /// execution's newest for [`CheckpointManager::restore_latest`].
    Requested,
    /// An ancestor of the execution's newest checkpoint `head`, `generations` parent links
    /// back: `head` and the ones between could not be loaded (they are in
    /// [`Restored::skipped`]).
    Ancestor {
        /// The execution's newest checkpoint.
        head: CheckpointId,
        /// How many parent links back (1: the parent of `head`).
        generations: usize,
    },
    /// Neither the execution's newest checkpoint `head` nor any ancestor of it that the store
    /// has loads, so this is the newest checkpoint of the execution that does: it is not on
    /// `head`'s lineage (another branch, or an older part of a line whose middle is gone).
    NewestValid {
        /// The execution's newest checkpoint.
        head: CheckpointId,
    },
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
        let started = std::time::Instant::now();
        let checkpoint = self.prepare(state, options);
        self.commit_since(state, &checkpoint, started)?;
        Ok(checkpoint)
    }

    /// The checkpoint [`checkpoint`](Self::checkpoint) would take of `state`, not saved: for a
    /// caller that adds to it first (periodic capture writes a session summary into its last
    /// one), then [`commit`](Self::commit)s it.
    pub fn prepare(&self, state: &RuntimeState, options: CheckpointOptions) -> Checkpoint {
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
        checkpoint
    }

    /// Saves a checkpoint [`prepare`](Self::prepare)d from `state`, then marks the state
    /// checkpointed: emits the save metrics and `CheckpointSaved`, and clears the dirty set.
    pub fn commit(&self, state: &mut RuntimeState, checkpoint: &Checkpoint) -> Result<()> {
        self.commit_since(state, checkpoint, std::time::Instant::now())
    }

    /// [`commit`](Self::commit), with the save latency measured from `started`.
    fn commit_since(
        &self,
        state: &mut RuntimeState,
        checkpoint: &Checkpoint,
        started: std::time::Instant,
    ) -> Result<()> {
        let summary = self.store.save(checkpoint)?;
        crate::metrics::saved(&self.store, checkpoint, &summary, started.elapsed());
        state.mark_checkpointed(checkpoint);
        Ok(())
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
        let started = std::time::Instant::now();
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
        let summary = self.store.save(&c)?;
        crate::metrics::saved(&self.store, &c, &summary, started.elapsed());
        Ok(c)
    }

    fn restored(
        &self,
        (checkpoint, source): (Checkpoint, LoadSource),
        skipped: Vec<(CheckpointId, String)>,
        chosen: Chosen,
    ) -> Restored {
        let state = RuntimeState::from_checkpoint(&checkpoint, self.clock.clone());
        Restored {
            remaining_steps: checkpoint.remaining_steps(),
            state,
            checkpoint,
            skipped,
            chosen,
            source,
        }
    }

    /// Restores a checkpoint by id. A store with a second copy (files plus a database) may load
    /// the database's copy of a damaged file: [`Restored::source`] says so.
    pub fn restore(&self, id: &CheckpointId) -> Result<Restored> {
        let loaded = self.store.load_with_source(id)?;
        Ok(self.restored(loaded, Vec::new(), Chosen::Requested))
    }

    /// Restores the newest checkpoint of an execution, or, when it cannot be loaded, the newest
    /// of its ancestors that can: a damaged checkpoint is skipped rather than failing the
    /// resume, and the resume stays on the same line of work (in a forked execution, the
    /// branch's newest valid checkpoint may be on another branch; an ancestor never is).
    ///
    /// - The newest checkpoint is the newest listed, or a newer damaged one the store knows of
    ///   ([`CheckpointStore::damaged`]: a file found damaged, placed by what its index entry or
    ///   its readable part says).
    /// - From it, the walk follows `parent_id` through summaries ([`CheckpointStore::summary`],
    ///   or what is known of a damaged one) and loads one checkpoint per step, staying inside
    ///   the execution; [`Restored::chosen`] is [`Chosen::Ancestor`] when it went back.
    /// - If no ancestor loads (the chain ends at a damaged root, or at a parent that is gone),
    ///   it falls back to the newest checkpoint of the execution that loads
    ///   ([`Chosen::NewestValid`]), and if none does, returns the last load error.
    ///
    /// Every checkpoint passed over is in [`Restored::skipped`] with why. Only load errors that
    /// mean damage are skipped (a corrupted or unreadable file, a non-regular file, one that
    /// vanished); any other error (a database that cannot be reached) is returned at once.
    pub fn restore_latest(&self, execution_id: &ExecutionId) -> Result<Restored> {
        let listed = self.store.list(&ListFilter::execution(execution_id))?;
        let damaged: HashMap<CheckpointId, DamagedCheckpoint> = self
            .store
            .damaged()?
            .into_iter()
            .map(|d| (d.id.clone(), d))
            .collect();
        let newest_damaged = damaged
            .values()
            .filter(|d| d.execution_id.as_ref() == Some(execution_id))
            .filter_map(|d| d.timestamp.map(|t| (t, &d.id)))
            .max();
        let head = match (listed.first(), newest_damaged) {
            (Some(s), Some(d)) if d > (s.timestamp, &s.id) => d.1.clone(),
            (Some(s), _) => s.id.clone(),
            (None, Some(d)) => d.1.clone(),
            (None, None) => {
                return Err(Error::NotFound {
                    what: "execution",
                    id: execution_id.to_string(),
                })
            }
        };

        let listed_by_id: HashMap<&CheckpointId, &crate::store::CheckpointSummary> =
            listed.iter().map(|s| (&s.id, s)).collect();
        let mut skipped = Vec::new();
        let mut tried = HashSet::new();
        let mut last_error = None;
        let mut next = Some(head.clone());
        let mut generations = 0;
        while let Some(id) = next.take() {
            if !tried.insert(id.clone()) {
                break; // a cycle in hand-edited files
            }
            // The execution's own checkpoints are listed already; only a parent outside the
            // listing (another execution's, say) needs a lookup.
            let summary = match listed_by_id.get(&id) {
                Some(s) => Some((*s).clone()),
                None => self.store.summary(&id)?,
            };
            if summary
                .as_ref()
                .is_some_and(|s| &s.execution_id != execution_id)
            {
                break; // the line came from another execution (a fork): not this one's state
            }
            match self.try_load(&id, execution_id, &mut skipped, &mut last_error)? {
                Attempt::Loaded(loaded) => {
                    let chosen = match generations {
                        0 => Chosen::Requested,
                        g => Chosen::Ancestor {
                            head,
                            generations: g,
                        },
                    };
                    return Ok(self.restored(*loaded, skipped, chosen));
                }
                Attempt::OtherExecution => break,
                Attempt::Damaged => {
                    next = match summary {
                        Some(s) => s.parent_id,
                        None => damaged.get(&id).and_then(|d| d.parent_id.clone()),
                    };
                    generations += 1;
                }
            }
        }

        // No ancestor loads: the newest checkpoint of the execution that does.
        for s in listed.iter().filter(|s| !tried.contains(&s.id)) {
            if let Attempt::Loaded(loaded) =
                self.try_load(&s.id, execution_id, &mut skipped, &mut last_error)?
            {
                return Ok(self.restored(*loaded, skipped, Chosen::NewestValid { head }));
            }
        }
        Err(last_error.unwrap_or(Error::NotFound {
            what: "execution",
            id: execution_id.to_string(),
        }))
    }

    /// Loads `id` for a restore of `execution_id`. Damage (and a checkpoint of another
    /// execution) is recorded in `skipped`; an error that is not damage is returned.
    fn try_load(
        &self,
        id: &CheckpointId,
        execution_id: &ExecutionId,
        skipped: &mut Vec<(CheckpointId, String)>,
        last_error: &mut Option<Error>,
    ) -> Result<Attempt> {
        match self.store.load_with_source(id) {
            Ok((c, _)) if &c.execution_id != execution_id => {
                skipped.push((
                    id.clone(),
                    format!(
                        "belongs to execution {}, not {execution_id}",
                        c.execution_id
                    ),
                ));
                Ok(Attempt::OtherExecution)
            }
            Ok(loaded) => Ok(Attempt::Loaded(Box::new(loaded))),
            Err(
                e @ (Error::Load { .. } | Error::NotRegularFile { .. } | Error::NotFound { .. }),
            ) => {
                skipped.push((id.clone(), e.to_string()));
                *last_error = Some(e);
                Ok(Attempt::Damaged)
            }
            Err(e) => Err(e),
        }
    }
}

/// What came of trying to load one checkpoint during a restore.
enum Attempt {
    Loaded(Box<(Checkpoint, LoadSource)>),
    /// It could not be loaded (recorded in `skipped`).
    Damaged,
    /// It loaded, but belongs to another execution (recorded in `skipped`).
    OtherExecution,
}
