//! The snapshot of the newest checkpoint of recently written lines, kept in memory so that the
//! next save of a line compares against it without reading it back.
//!
//! An entry is only used when the database says, inside the save's transaction, that the line's
//! tip is still that checkpoint: the child's `checkpoints` row goes in only on that condition
//! (one statement, see [`crate::checkpoint::save`]), or the tip's seq and id are read back.
//! Otherwise — another process appended, the tip was deleted — the items are read from the
//! database instead.

use crate::checkpoint::checkpoint_row::Place;
use crate::checkpoint::entry_since::EntrySince;
use caf_core::format::{Checkpoint, Snapshot};
use std::collections::HashMap;

/// How many lines are remembered (each entry holds one snapshot).
const CAPACITY: usize = 64;

/// The snapshot of the checkpoint at the tip of a line.
#[derive(Debug, Clone)]
pub(crate) struct Tip {
    pub place: Place,
    pub checkpoint_id: String,
    pub execution_id: String,
    pub snapshot: Snapshot,
    /// Where the current revisions of its entries start.
    pub entry_since: EntrySince,
}

impl Tip {
    /// The tip that `c`, stored at `place` with its entries' revisions starting at `since`,
    /// makes.
    pub fn of(c: &Checkpoint, place: Place, since: EntrySince) -> Self {
        Self {
            place,
            checkpoint_id: c.id.to_string(),
            execution_id: c.execution_id.to_string(),
            snapshot: c.snapshot.clone(),
            entry_since: since,
        }
    }

    /// An empty tip for a line that `c` starts (filled by the save, then [`Tip::advance`]).
    pub fn of_new_line(c: &Checkpoint, place: Place) -> Self {
        Self {
            place,
            checkpoint_id: c.id.to_string(),
            execution_id: c.execution_id.to_string(),
            snapshot: Snapshot::default(),
            entry_since: EntrySince::default(),
        }
    }

    /// Makes this the tip `c` makes at `place`. The save already brought the items and the
    /// lists and maps up to date as it compared them ([`crate::checkpoint::item_revisions`],
    /// [`crate::checkpoint::entry_revisions`]); the few remaining fields are copied if they
    /// differ.
    pub fn advance(&mut self, c: &Checkpoint, place: Place) {
        fn same<T: PartialEq + Clone>(old: &mut T, new: &T) {
            if old != new {
                old.clone_from(new);
            }
        }
        let (s, n) = (&mut self.snapshot, &c.snapshot);
        same(&mut s.tool_state.last_call_id, &n.tool_state.last_call_id);
        same(
            &mut s.thought_chain.current_thought_id,
            &n.thought_chain.current_thought_id,
        );
        s.progress.step_number = n.progress.step_number;
        s.progress.total_steps = n.progress.total_steps;
        s.progress.iterations_completed = n.progress.iterations_completed;
        same(&mut s.progress.plan, &n.progress.plan);
        same(&mut s.progress.task, &n.progress.task);
        same(&mut s.progress.last_error, &n.progress.last_error);
        debug_assert_eq!(s, n, "the cached tip is the saved snapshot");
        self.place = place;
        self.checkpoint_id = c.id.to_string();
        self.execution_id = c.execution_id.to_string();
    }
}

/// Recently written line tips, by line id; the least recently used goes first.
#[derive(Debug, Default)]
pub(crate) struct LineCache {
    entries: HashMap<i64, (u64, Tip)>,
    clock: u64,
}

impl LineCache {
    /// Takes the tip that is checkpoint `checkpoint_id` of execution `execution_id`, if one is
    /// remembered: the line a child of it would continue. (The database is asked in the save's
    /// transaction whether it still is the tip.)
    pub fn take_checkpoint(&mut self, checkpoint_id: &str, execution_id: &str) -> Option<Tip> {
        let line = self
            .entries
            .iter()
            .find(|(_, (_, t))| t.checkpoint_id == checkpoint_id && t.execution_id == execution_id)
            .map(|(line, _)| *line)?;
        self.entries.remove(&line).map(|(_, tip)| tip)
    }

    /// Takes the tip of `place.line_id` if it is the checkpoint `checkpoint_id` at `place.seq`.
    pub fn take(&mut self, place: Place, checkpoint_id: &str) -> Option<Tip> {
        let (_, tip) = self.entries.remove(&place.line_id)?;
        (tip.place == place && tip.checkpoint_id == checkpoint_id).then_some(tip)
    }

    /// Remembers a tip: in the cache of a transaction, which becomes the store's once it
    /// commits (see [`crate::SqlStore`]'s saves).
    pub fn put(&mut self, tip: Tip) {
        self.clock += 1;
        self.entries.insert(tip.place.line_id, (self.clock, tip));
        if self.entries.len() > CAPACITY {
            if let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(line, _)| *line)
            {
                self.entries.remove(&oldest);
            }
        }
    }

    /// Forgets a line.
    pub fn forget_line(&mut self, line_id: i64) {
        self.entries.remove(&line_id);
    }

    /// Forgets every line of an execution.
    pub fn forget_execution(&mut self, execution_id: &str) {
        self.entries
            .retain(|_, (_, t)| t.execution_id != execution_id);
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}
