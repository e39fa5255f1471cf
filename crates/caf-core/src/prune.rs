//! Pruning a store by a [`RetentionPolicy`], and keeping lineage readable afterwards.
//!
//! [`prune`] plans over the summaries of the whole store ([`crate::retention::plan`]) and
//! deletes what the plan condemns. Only checkpoints that were listed can be deleted, so a save
//! that races a prune is never deleted; pruning again deletes nothing more (the planner's
//! idempotence); a dry run changes nothing.
//!
//! **Lineage after pruning.** Before deleting, the prune records a *tombstone* for each
//! condemned checkpoint — its id, parent, execution and time — in the store
//! ([`CheckpointStore::record_pruned`]): a directory appends it to `DIR/.caf/pruned.jsonl`
//! ([`PrunedLog`], append-only, synced before the first delete), a database-only store keeps it
//! in its `pruned` table. A kept checkpoint whose parent
//! was pruned still shows where it came from: [`ancestry`] follows tombstones to the nearest
//! kept ancestor and counts the pruned checkpoints in between; `caf log` shows the gap.

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::id::{CheckpointId, ExecutionId};
use crate::retention::{plan, PrunePlan, RetentionPolicy};
use crate::store::{CheckpointStore, CheckpointSummary, ListFilter};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What is remembered of a pruned checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// The pruned checkpoint.
    pub id: CheckpointId,
    /// Its parent.
    pub parent_id: Option<CheckpointId>,
    /// Its execution.
    pub execution_id: ExecutionId,
    /// Its time.
    pub timestamp: Timestamp,
    /// When it was pruned.
    pub pruned_at: Timestamp,
}

/// The tombstones of a store directory: `DIR/.caf/pruned.jsonl`, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedLog {
    path: PathBuf,
}

impl PrunedLog {
    /// The log of the store in `dir`.
    pub fn of_dir(dir: &Path) -> Self {
        Self {
            path: dir.join(".caf").join("pruned.jsonl"),
        }
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends tombstones and syncs the file.
    pub fn record(&self, stones: &[Tombstone]) -> Result<()> {
        if stones.is_empty() {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut text = String::new();
        for t in stones {
            // Serializing these plain fields cannot fail.
            text.push_str(&serde_json::to_string(t).unwrap_or_default());
            text.push('\n');
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::io(&self.path, e))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_data())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Every tombstone, by id (a line that does not parse, e.g. torn by a crash, is skipped).
    pub fn load(&self) -> Result<HashMap<CheckpointId, Tombstone>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str::<Tombstone>(l).ok())
            .map(|t| (t.id.clone(), t))
            .collect())
    }
}

/// What a prune did (or would do).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PruneOutcome {
    /// The plan: what is kept and why, what is deleted and why.
    pub plan: PrunePlan,
    /// The ids deleted (empty in a dry run).
    pub deleted: Vec<CheckpointId>,
    /// Whether it was a dry run.
    pub dry_run: bool,
}

/// Prunes `store` by `policy` at time `now`: plans over every checkpoint, deletes the condemned
/// ones (only in `execution`, if given), recording their tombstones in the store first
/// ([`CheckpointStore::record_pruned`]).
pub fn prune(
    store: &dyn CheckpointStore,
    policy: &RetentionPolicy,
    execution: Option<&ExecutionId>,
    now: Timestamp,
    dry_run: bool,
) -> Result<PruneOutcome> {
    let all = store.list(&ListFilter::default())?;
    let mut plan = plan(policy, &all, now);
    if let Some(e) = execution {
        let in_execution =
            |id: &CheckpointId| all.iter().any(|s| &s.id == id && &s.execution_id == e);
        plan.keep.retain(|(id, _)| in_execution(id));
        plan.delete.retain(|(id, _)| in_execution(id));
    }
    if dry_run {
        return Ok(PruneOutcome {
            plan,
            deleted: Vec::new(),
            dry_run,
        });
    }
    let by_id: HashMap<&CheckpointId, &CheckpointSummary> =
        all.iter().map(|s| (&s.id, s)).collect();
    let doomed: Vec<&CheckpointSummary> = plan
        .delete
        .iter()
        .filter_map(|(id, _)| by_id.get(id).copied())
        .collect();
    let deleted = delete_recorded(store, &doomed, now)?;
    Ok(PruneOutcome {
        plan,
        deleted,
        dry_run,
    })
}

/// Deletes `doomed` from `store`, first recording their tombstones in the store, so that
/// lineage stays readable; returns the ids that were there to delete.
pub fn delete_recorded(
    store: &dyn CheckpointStore,
    doomed: &[&CheckpointSummary],
    now: Timestamp,
) -> Result<Vec<CheckpointId>> {
    let stones: Vec<Tombstone> = doomed
        .iter()
        .map(|s| Tombstone {
            id: s.id.clone(),
            parent_id: s.parent_id.clone(),
            execution_id: s.execution_id.clone(),
            timestamp: s.timestamp,
            pruned_at: now,
        })
        .collect();
    store.record_pruned(&stones)?;
    let mut deleted = Vec::new();
    for s in doomed {
        if store.delete(&s.id)? {
            deleted.push(s.id.clone());
        }
    }
    crate::metrics::pruned(store, deleted.len());
    Ok(deleted)
}

/// Where a checkpoint's missing parent leads: the nearest ancestor still in the store (if any)
/// and how many pruned checkpoints lie in between.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// The parent named by the checkpoint, which is not in the store.
    pub missing_parent: CheckpointId,
    /// The nearest ancestor in the store, found through tombstones.
    pub nearest_kept: Option<CheckpointId>,
    /// How many pruned checkpoints were followed (0 when the parent is unknown to the log).
    pub pruned: usize,
}

/// The gap above checkpoint `id`, if its parent is not in the store: followed through the
/// tombstones of `pruned` to the nearest kept ancestor.
pub fn ancestry(
    store: &dyn CheckpointStore,
    pruned: &HashMap<CheckpointId, Tombstone>,
    parent: &CheckpointId,
) -> Result<Option<Gap>> {
    if store.summary(parent)?.is_some() {
        return Ok(None);
    }
    let mut count = 0;
    let mut at = Some(parent.clone());
    while let Some(id) = at {
        if store.summary(&id)?.is_some() {
            return Ok(Some(Gap {
                missing_parent: parent.clone(),
                nearest_kept: Some(id),
                pruned: count,
            }));
        }
        let Some(stone) = pruned.get(&id) else { break };
        count += 1;
        if count > pruned.len() {
            break; // a cycle in a hand-edited log
        }
        at = stone.parent_id.clone();
    }
    Ok(Some(Gap {
        missing_parent: parent.clone(),
        nearest_kept: None,
        pruned: count,
    }))
}
