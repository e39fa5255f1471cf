//! The snapshot of the newest checkpoint of recently written lines, kept in memory so that the
//! next save of a line compares against it without reading it back.
//!
//! An entry is only used when the database says the line's tip is still that checkpoint (its
//! seq and id are read inside the save's transaction); otherwise — another process appended, the
//! tip was deleted — the items are read from the database instead.

use crate::checkpoint::checkpoint_row::Place;
use caf_core::format::{Checkpoint, Snapshot};
use serde_json::Value;
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
}

impl Tip {
    /// The tip that `c`, stored at `place`, makes.
    pub fn of(c: &Checkpoint, place: Place) -> Self {
        Self {
            place,
            checkpoint_id: c.id.to_string(),
            execution_id: c.execution_id.to_string(),
            snapshot: c.snapshot.clone(),
        }
    }

    /// An empty tip for a line that `c` starts (filled by the save, then [`Tip::advance`]).
    pub fn of_new_line(c: &Checkpoint, place: Place) -> Self {
        Self {
            place,
            checkpoint_id: c.id.to_string(),
            execution_id: c.execution_id.to_string(),
            snapshot: Snapshot::default(),
        }
    }

    /// Makes this the tip `c` makes at `place`, copying only what differs. The thoughts, tool
    /// calls and completed steps are already `c`'s (the save updated them as it compared).
    pub fn advance(&mut self, c: &Checkpoint, place: Place) {
        fn list(old: &mut Vec<Value>, new: &[Value]) {
            old.truncate(new.len());
            for (i, n) in new.iter().enumerate() {
                match old.get_mut(i) {
                    Some(o) if o == n => {}
                    Some(o) => *o = n.clone(),
                    None => old.push(n.clone()),
                }
            }
        }
        fn same<T: PartialEq + Clone>(old: &mut T, new: &T) {
            if old != new {
                *old = new.clone();
            }
        }
        let (s, n) = (&mut self.snapshot, &c.snapshot);
        list(&mut s.context.history, &n.context.history);
        list(&mut s.context.memory, &n.context.memory);
        list(&mut s.context.messages, &n.context.messages);
        same(&mut s.context.state, &n.context.state);
        same(&mut s.context.variables, &n.context.variables);
        same(&mut s.tool_state.results, &n.tool_state.results);
        same(&mut s.tool_state.last_call_id, &n.tool_state.last_call_id);
        same(
            &mut s.thought_chain.current_thought_id,
            &n.thought_chain.current_thought_id,
        );
        same(&mut s.progress.pending_steps, &n.progress.pending_steps);
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
    /// Takes the tip of `place.line_id` if it is the checkpoint `checkpoint_id` at `place.seq`.
    pub fn take(&mut self, place: Place, checkpoint_id: &str) -> Option<Tip> {
        let (_, tip) = self.entries.remove(&place.line_id)?;
        (tip.place == place && tip.checkpoint_id == checkpoint_id).then_some(tip)
    }

    /// Remembers a tip (after its transaction committed).
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
