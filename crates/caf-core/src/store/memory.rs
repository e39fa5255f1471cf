//! [`MemoryStore`]: checkpoints in memory, with a per-execution limit.

use super::{CheckpointStore, CheckpointSummary, ListFilter};
use crate::error::{Error, Result};
use crate::format::{encode, Checkpoint};
use crate::id::{CheckpointId, ExecutionId};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// The default number of checkpoints kept per execution.
pub const DEFAULT_MAX_PER_EXECUTION: usize = 10;

#[derive(Default)]
struct Inner {
    by_id: HashMap<CheckpointId, (Checkpoint, CheckpointSummary)>,
    by_execution: HashMap<ExecutionId, Vec<CheckpointId>>,
}

/// Checkpoints in memory (seed 000 semantics).
///
/// - Saving stores a copy and loading returns a copy, so callers can never change what is stored.
/// - Each execution keeps at most `max_per_execution` checkpoints (default 10); saving one more
///   evicts the oldest (first in, first out).
/// - Saving an existing id replaces it in place.
/// - Checkpoints are checked as a file store would check them: one the format cannot hold is
///   refused.
pub struct MemoryStore {
    inner: Mutex<Inner>,
    max_per_execution: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// A store keeping [`DEFAULT_MAX_PER_EXECUTION`] checkpoints per execution.
    pub fn new() -> Self {
        Self::with_max_per_execution(DEFAULT_MAX_PER_EXECUTION)
    }

    /// A store keeping at most `max` checkpoints per execution (at least 1).
    pub fn with_max_per_execution(max: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            max_per_execution: max.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` half-updated in a way that matters
        // more than losing the store, so recover the guard.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn remove(&mut self, id: &CheckpointId) -> bool {
        let Some((c, _)) = self.by_id.remove(id) else {
            return false;
        };
        if let Some(ids) = self.by_execution.get_mut(&c.execution_id) {
            ids.retain(|x| x != id);
            if ids.is_empty() {
                self.by_execution.remove(&c.execution_id);
            }
        }
        true
    }
}

impl CheckpointStore for MemoryStore {
    fn save(&self, checkpoint: &Checkpoint) -> Result<CheckpointSummary> {
        let bytes = encode(checkpoint).map_err(|error| Error::Encode {
            id: checkpoint.id.to_string(),
            error,
        })?;
        let summary = CheckpointSummary::of(checkpoint, bytes.len() as u64);
        let mut inner = self.lock();
        let moved = inner
            .by_id
            .get(&checkpoint.id)
            .is_some_and(|(old, _)| old.execution_id != checkpoint.execution_id);
        if moved {
            inner.remove(&checkpoint.id);
        }
        let is_new = !inner.by_id.contains_key(&checkpoint.id);
        inner
            .by_id
            .insert(checkpoint.id.clone(), (checkpoint.clone(), summary.clone()));
        if is_new {
            inner
                .by_execution
                .entry(checkpoint.execution_id.clone())
                .or_default()
                .push(checkpoint.id.clone());
        }
        // Evict the oldest beyond the limit.
        let ids = inner
            .by_execution
            .get(&checkpoint.execution_id)
            .cloned()
            .unwrap_or_default();
        if ids.len() > self.max_per_execution {
            let mut summaries: Vec<CheckpointSummary> = ids
                .iter()
                .filter_map(|id| inner.by_id.get(id).map(|(_, s)| s.clone()))
                .collect();
            summaries.sort_by(CheckpointSummary::newest_first);
            for old in summaries.iter().skip(self.max_per_execution) {
                inner.remove(&old.id);
            }
        }
        Ok(summary)
    }

    fn load(&self, id: &CheckpointId) -> Result<Checkpoint> {
        self.lock()
            .by_id
            .get(id)
            .map(|(c, _)| c.clone())
            .ok_or_else(|| Error::not_found(id))
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<CheckpointSummary>> {
        let inner = self.lock();
        let items: Vec<CheckpointSummary> = match &filter.execution_id {
            Some(e) => inner
                .by_execution
                .get(e)
                .into_iter()
                .flatten()
                .filter_map(|id| inner.by_id.get(id).map(|(_, s)| s.clone()))
                .collect(),
            None => inner.by_id.values().map(|(_, s)| s.clone()).collect(),
        };
        Ok(filter.apply(items))
    }

    fn delete(&self, id: &CheckpointId) -> Result<bool> {
        Ok(self.lock().remove(id))
    }

    fn delete_execution(&self, execution_id: &ExecutionId) -> Result<usize> {
        let mut inner = self.lock();
        let ids = inner.by_execution.remove(execution_id).unwrap_or_default();
        for id in &ids {
            inner.by_id.remove(id);
        }
        Ok(ids.len())
    }
}
