//! The history of a store's checkpoints as `caf log` shows it and the MCP resource
//! `execution://{id}` serves it: each checkpoint with its parent, children, and whether it is a
//! head or its execution's latest. Everything comes from one listing of summaries; no
//! checkpoint is loaded. Relations are those of the whole store, also when one execution is
//! shown: a checkpoint whose only child is in another execution is not a head, and a parent in
//! another execution is not missing.

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::format::CheckpointReason;
use crate::id::{CheckpointId, ExecutionId};
use crate::store::{CheckpointStore, CheckpointSummary, ListFilter};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Where a checkpoint's parent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentLink {
    /// It has none.
    Root,
    /// In the store, at this index of the listing.
    Stored(usize),
    /// Named, but not in the store.
    Missing,
}

/// What the whole store says about each of its checkpoints (indexes into a listing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relations {
    /// Where each one's parent is.
    pub parent: Vec<ParentLink>,
    /// Each one's children, newest first.
    pub children: Vec<Vec<usize>>,
    /// Whether each one is the newest checkpoint of its execution.
    pub latest: Vec<bool>,
}

impl Relations {
    /// The relations of `all`, listed newest first.
    pub fn of(all: &[CheckpointSummary]) -> Self {
        let mut position: HashMap<&CheckpointId, usize> = HashMap::with_capacity(all.len());
        for (i, s) in all.iter().enumerate() {
            position.entry(&s.id).or_insert(i);
        }
        let parent: Vec<ParentLink> = all
            .iter()
            .map(|s| match &s.parent_id {
                None => ParentLink::Root,
                Some(p) => position
                    .get(p)
                    .map_or(ParentLink::Missing, |&i| ParentLink::Stored(i)),
            })
            .collect();
        let mut children = vec![Vec::new(); all.len()];
        for (i, p) in parent.iter().enumerate() {
            if let ParentLink::Stored(p) = *p {
                children[p].push(i);
            }
        }
        let mut seen = HashSet::new();
        let latest = all.iter().map(|s| seen.insert(&s.execution_id)).collect();
        Self {
            parent,
            children,
            latest,
        }
    }
}

/// One checkpoint of the history (`caf --json log`, `execution://{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The checkpoint.
    pub id: CheckpointId,
    /// Its parent.
    pub parent_id: Option<CheckpointId>,
    /// Its execution.
    pub execution_id: ExecutionId,
    /// The step reached.
    pub step_number: u64,
    /// Why it was taken.
    pub reason: CheckpointReason,
    /// When.
    pub timestamp: Timestamp,
    /// Its name.
    pub name: Option<String>,
    /// Its labels.
    pub labels: Vec<String>,
    /// Children anywhere in the store, newest first.
    pub children: Vec<CheckpointId>,
    /// No checkpoint of the store names it as parent.
    pub head: bool,
    /// The newest checkpoint of its execution.
    pub latest: bool,
    /// Its parent is named but not in the store.
    pub parent_missing: bool,
    /// In a graph drawing (`caf log --graph`): the lane (column) of its row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<usize>,
}

impl LogEntry {
    /// The entry of `all[i]`, with the relations of `all`.
    pub fn of(all: &[CheckpointSummary], rel: &Relations, i: usize, lane: Option<usize>) -> Self {
        let s = &all[i];
        Self {
            id: s.id.clone(),
            parent_id: s.parent_id.clone(),
            execution_id: s.execution_id.clone(),
            step_number: s.step_number,
            reason: s.checkpoint_reason.clone(),
            timestamp: s.timestamp,
            name: s.name.clone(),
            labels: s.labels.clone(),
            children: rel.children[i].iter().map(|&c| all[c].id.clone()).collect(),
            head: rel.children[i].is_empty(),
            latest: rel.latest[i],
            parent_missing: rel.parent[i] == ParentLink::Missing,
            lane,
        }
    }
}

/// The history of one execution, newest first ([`Error::NotFound`] if it has no checkpoints).
pub fn execution_log(
    store: &dyn CheckpointStore,
    execution: &ExecutionId,
) -> Result<Vec<LogEntry>> {
    let all = store.list(&ListFilter::default())?;
    let rel = Relations::of(&all);
    let entries: Vec<LogEntry> = (0..all.len())
        .filter(|&i| &all[i].execution_id == execution)
        .map(|i| LogEntry::of(&all, &rel, i, None))
        .collect();
    if entries.is_empty() {
        return Err(Error::NotFound {
            what: "execution",
            id: execution.to_string(),
        });
    }
    Ok(entries)
}
