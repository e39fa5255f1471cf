//! [`MemoryStore`]: checkpoints in memory, with a per-execution limit.

use super::{CheckpointStore, CheckpointSummary, ListFilter};
use crate::error::{Error, Result};
use crate::format::{encode, Checkpoint};
use crate::id::{CheckpointId, ExecutionId};
use crate::redact::{RedactionRules, Redactor};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// The default number of checkpoints kept per execution.
pub const DEFAULT_MAX_PER_EXECUTION: usize = 10;

#[derive(Default)]
struct Inner {
    by_id: HashMap<CheckpointId, (Checkpoint, CheckpointSummary)>,
    /// Each execution's ids in save order, first saved first.
    by_execution: HashMap<ExecutionId, Vec<CheckpointId>>,
}

/// Checkpoints in memory (seed 000 semantics).
///
/// - Saving stores a copy and loading returns a copy, so callers can never change what is stored.
/// - Each execution keeps at most `max_per_execution` checkpoints (default 10); saving one more
///   evicts the one saved first (first in, first out). Eviction follows save order, not
///   timestamps: a checkpoint whose save returned `Ok` is never evicted by that same save, even
///   if its timestamp is older than every other.
/// - Saving an existing id replaces it in place and keeps its place in the save order.
/// - Checkpoints are checked as a file store would check them: one the format cannot hold is
///   refused, and secrets are redacted as every store redacts them ([`crate::redact`]).
pub struct MemoryStore {
    inner: Mutex<Inner>,
    max_per_execution: usize,
    redactor: Redactor,
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
            redactor: Redactor::default(),
        }
    }

    /// Replaces the store's redaction rules (default: every built-in rule).
    pub fn set_redaction(&mut self, rules: RedactionRules) {
        self.redactor = Redactor::new(rules);
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
        let redacted = self.redactor.redact_for(checkpoint, self);
        let checkpoint = &*redacted.checkpoint;
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
        // Evict the first saved beyond the limit: `by_execution` holds ids in save order.
        let evicted: Vec<CheckpointId> = match inner.by_execution.get_mut(&checkpoint.execution_id)
        {
            Some(ids) if ids.len() > self.max_per_execution => {
                let excess = ids.len() - self.max_per_execution;
                ids.drain(..excess).collect()
            }
            _ => Vec::new(),
        };
        for id in &evicted {
            inner.by_id.remove(id);
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

    fn summary(&self, id: &CheckpointId) -> Result<Option<CheckpointSummary>> {
        Ok(self.lock().by_id.get(id).map(|(_, s)| s.clone()))
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

    fn describe(&self) -> String {
        "memory".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::format::CheckpointReason;

    fn save(store: &MemoryStore, id: &str, millis: i64) -> Result<CheckpointSummary> {
        let c = Checkpoint::new(
            CheckpointId::new(id)?,
            ExecutionId::new("exec")?,
            "agent",
            Timestamp::from_millis(millis),
            CheckpointReason::Manual,
        );
        store.save(&c)
    }

    fn listed(store: &MemoryStore) -> Vec<String> {
        store
            .list(&ListFilter::default())
            .unwrap_or_default()
            .into_iter()
            .map(|s| s.id.to_string())
            .collect()
    }

    #[test]
    fn evicts_in_save_order_not_timestamp_order() -> Result<()> {
        let store = MemoryStore::with_max_per_execution(3);
        save(&store, "c_10", 10)?;
        save(&store, "c_20", 20)?;
        save(&store, "c_30", 30)?;
        // Saved last with the oldest timestamp (a clock that went back, an imported file):
        // FIFO evicts the first saved, never the checkpoint that was just saved.
        save(&store, "c_05", 5)?;
        assert!(store.load(&CheckpointId::new("c_05")?).is_ok());
        assert!(store.load(&CheckpointId::new("c_10")?).is_err());
        assert_eq!(listed(&store), ["c_30", "c_20", "c_05"]);
        // The next save evicts the next first saved.
        save(&store, "c_01", 1)?;
        assert_eq!(listed(&store), ["c_30", "c_05", "c_01"]);
        Ok(())
    }

    #[test]
    fn replacing_keeps_the_save_position() -> Result<()> {
        let store = MemoryStore::with_max_per_execution(2);
        save(&store, "a", 1)?;
        save(&store, "b", 2)?;
        save(&store, "a", 3)?; // replaced in place: still the first saved
        save(&store, "c", 4)?;
        assert_eq!(listed(&store), ["c", "b"]);
        Ok(())
    }
}
