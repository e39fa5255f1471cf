//! The index's entries in memory: by checkpoint id, and each execution's in time order.
//!
//! `latest`, `list` of one execution and `delete_execution` read an execution's entries
//! through the second map, so they cost what that execution holds, not what the whole store
//! holds (a scan of every entry cost `latest` ~10 % of its time at 2,000 checkpoints, and grew
//! with the store).

use super::index::Entry;
use crate::clock::Timestamp;
use crate::id::{CheckpointId, ExecutionId};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Where an entry sorts within its execution: oldest first, as
/// [`super::CheckpointSummary::newest_first`] orders them backwards (time, then id).
type Order = (Timestamp, CheckpointId);

/// Entries by id, and every execution's in time order (the same entries, shared: an
/// execution's listing walks its own map, with no lookup by id).
#[derive(Debug, Default)]
pub(crate) struct Entries {
    by_id: HashMap<CheckpointId, Arc<Entry>>,
    by_execution: HashMap<ExecutionId, BTreeMap<Order, Arc<Entry>>>,
}

fn order(entry: &Entry) -> Order {
    (entry.summary.timestamp, entry.summary.id.clone())
}

impl Entries {
    pub fn get(&self, id: &CheckpointId) -> Option<&Entry> {
        self.by_id.get(id).map(|e| &**e)
    }

    pub fn contains_key(&self, id: &CheckpointId) -> bool {
        self.by_id.contains_key(id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.by_id.values().map(|e| &**e)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&CheckpointId, &Entry)> {
        self.by_id.iter().map(|(id, e)| (id, &**e))
    }

    /// Records `entry` (whose summary's id is `id`, as a file's name and content agree); the
    /// entry it replaces, if any.
    pub fn insert(&mut self, id: CheckpointId, entry: Entry) -> Option<Entry> {
        debug_assert_eq!(id, entry.summary.id);
        let old = self.remove(&id);
        let entry = Arc::new(entry);
        self.by_execution
            .entry(entry.summary.execution_id.clone())
            .or_default()
            .insert(order(&entry), Arc::clone(&entry));
        self.by_id.insert(id, entry);
        old
    }

    pub fn remove(&mut self, id: &CheckpointId) -> Option<Entry> {
        let old = self.by_id.remove(id)?;
        let execution = &old.summary.execution_id;
        if let Some(of) = self.by_execution.get_mut(execution) {
            of.remove(&order(&old));
            if of.is_empty() {
                self.by_execution.remove(execution);
            }
        }
        // The last holder now: the execution's map gave its share back.
        Some(Arc::unwrap_or_clone(old))
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&CheckpointId) -> bool) {
        let gone: Vec<CheckpointId> = self.by_id.keys().filter(|id| !keep(id)).cloned().collect();
        for id in &gone {
            self.remove(id);
        }
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
        self.by_execution.clear();
    }

    /// The entries of `execution`, newest first.
    pub fn of_execution<'a>(
        &'a self,
        execution: &ExecutionId,
    ) -> impl Iterator<Item = &'a Entry> + 'a {
        self.by_execution
            .get(execution)
            .into_iter()
            .flat_map(|of| of.values().rev().map(|e| &**e))
    }

    /// The newest entry of `execution`.
    pub fn newest_of(&self, execution: &ExecutionId) -> Option<&Entry> {
        self.of_execution(execution).next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Checkpoint, CheckpointReason};
    use crate::store::CheckpointSummary;
    use proptest::prelude::*;

    fn entry(id: u8, execution: u8, millis: i64) -> Entry {
        let c = Checkpoint::new(
            CheckpointId::new(format!("ckpt_{id}")).unwrap(),
            ExecutionId::new(format!("exec_{execution}")).unwrap(),
            "agent",
            Timestamp::from_millis(millis),
            CheckpointReason::Manual,
        );
        Entry {
            summary: CheckpointSummary::of(&c, 10),
            mtime_ns: 1,
            integrity: None,
            digest: None,
        }
    }

    /// An execution's entries, newest first, found by scanning every entry.
    fn scanned(entries: &Entries, execution: &ExecutionId) -> Vec<CheckpointId> {
        let mut of: Vec<&Entry> = entries
            .values()
            .filter(|e| &e.summary.execution_id == execution)
            .collect();
        of.sort_by(|a, b| CheckpointSummary::newest_first(&a.summary, &b.summary));
        of.into_iter().map(|e| e.summary.id.clone()).collect()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert { id: u8, execution: u8, millis: i64 },
        Remove(u8),
        Retain(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..12u8, 0..3u8, 0..5i64)
                .prop_map(|(id, execution, millis)| Op::Insert { id, execution, millis }),
            1 => (0..12u8).prop_map(Op::Remove),
            1 => (0..12u8).prop_map(Op::Retain),
        ]
    }

    proptest! {
        /// Whatever is inserted, replaced (in another execution, at another time) or removed,
        /// an execution's entries are those a scan of every entry finds, in the order
        /// `newest_first` gives, and nothing is left behind for an id that is gone.
        #[test]
        fn an_execution_lists_what_a_scan_finds(ops in proptest::collection::vec(op(), 0..60)) {
            let mut entries = Entries::default();
            for op in ops {
                match op {
                    Op::Insert { id, execution, millis } => {
                        let e = entry(id, execution, millis);
                        entries.insert(e.summary.id.clone(), e);
                    }
                    Op::Remove(id) => {
                        entries.remove(&CheckpointId::new(format!("ckpt_{id}")).unwrap());
                    }
                    // Keeps the ids whose number is not a multiple of `n + 1`.
                    Op::Retain(n) => entries.retain(|id| {
                        let k: u8 = id.as_str()[5..].parse().unwrap();
                        !k.is_multiple_of(n + 1)
                    }),
                }
                let mut indexed = 0;
                for x in 0..3u8 {
                    let execution = ExecutionId::new(format!("exec_{x}")).unwrap();
                    let listed: Vec<CheckpointId> = entries
                        .of_execution(&execution)
                        .map(|e| e.summary.id.clone())
                        .collect();
                    prop_assert_eq!(&listed, &scanned(&entries, &execution));
                    prop_assert_eq!(
                        entries.newest_of(&execution).map(|e| e.summary.id.clone()),
                        listed.first().cloned()
                    );
                    indexed += listed.len();
                }
                prop_assert_eq!(indexed, entries.len());
                let orders: usize = entries.by_execution.values().map(BTreeMap::len).sum();
                prop_assert_eq!(orders, entries.len());
            }
        }
    }

    #[test]
    fn clear_forgets_every_execution() {
        let mut entries = Entries::default();
        let e = entry(1, 1, 1);
        entries.insert(e.summary.id.clone(), e);
        entries.clear();
        assert_eq!(entries.len(), 0);
        assert!(entries
            .newest_of(&ExecutionId::new("exec_1").unwrap())
            .is_none());
    }
}
