//! What a [`super::Redactor`] remembers of the items it has looked at, per execution, so that a
//! save does not scan the whole history again: a thought, tool call, history entry, variable,
//! completed step or plan step equal to the copy remembered at its place is known (clean, or
//! redacted as remembered) without a scan. A comparison costs far less than a scan (for a
//! thought or a tool call, the very item remembered is known by its pointer: see
//! [`crate::format::same`]); only new or changed items are scanned. The same idea as the
//! encoder's spliced text (`format/encoder.rs`).

use crate::format::{CompletedStep, PlanStep, Thought, ToolCall};
use crate::id::ExecutionId;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Whether an item is the one remembered.
pub(super) trait Same {
    fn same(&self, other: &Self) -> bool;
}

impl<T: PartialEq> Same for Arc<T> {
    fn same(&self, other: &Self) -> bool {
        crate::format::same(self, other)
    }
}

impl Same for Value {
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl Same for CompletedStep {
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl Same for PlanStep {
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

/// One item looked at: its copy as given, and what redaction made of it.
#[derive(Debug)]
pub(super) struct Seen<T> {
    original: T,
    redacted: Option<T>,
    count: u64,
}

/// What `seen` remembers of `item`: the remembered outcome when `item` equals the remembered
/// original, nothing to replace when it is the remembered redacted form (already clean);
/// `None` when `item` is neither (it must be scanned).
fn known<T: Clone + Same>(seen: &Seen<T>, item: &T) -> Option<Option<(T, u64)>> {
    if seen.original.same(item) {
        return Some(seen.redacted.clone().map(|r| (r, seen.count)));
    }
    if seen.redacted.as_ref().is_some_and(|r| r.same(item)) {
        return Some(None);
    }
    None
}

/// Scans `item`: what redaction makes of it, and what to remember of it.
fn scan<T: Clone>(
    item: &T,
    redact: impl FnOnce(&T) -> Option<(T, u64)>,
) -> (Option<(T, u64)>, Seen<T>) {
    let out = redact(item);
    let seen = Seen {
        original: item.clone(),
        redacted: out.as_ref().map(|(r, _)| r.clone()),
        count: out.as_ref().map_or(0, |(_, n)| *n),
    };
    (out, seen)
}

/// What redaction makes of `item`, remembering it in `seen` ([`known`], else a [`scan`]).
fn through<T: Clone + Same>(
    seen: &mut Option<Seen<T>>,
    item: &T,
    redact: impl FnOnce(&T) -> Option<(T, u64)>,
) -> Option<(T, u64)> {
    if let Some(outcome) = seen.as_ref().and_then(|s| known(s, item)) {
        return outcome;
    }
    let (out, remembered) = scan(item, redact);
    *seen = Some(remembered);
    out
}

/// The items of a list, by position.
pub(super) fn list<T: Clone + Same>(
    memory: &mut Vec<Option<Seen<T>>>,
    items: &[T],
    redact: impl Fn(&T) -> Option<(T, u64)>,
) -> Option<(Vec<T>, u64)> {
    memory.truncate(items.len());
    memory.resize_with(items.len(), || None);
    let mut out: Option<Vec<T>> = None;
    let mut count = 0;
    for (i, (item, seen)) in items.iter().zip(memory.iter_mut()).enumerate() {
        if let Some((redacted, n)) = through(seen, item, &redact) {
            out.get_or_insert_with(|| items.to_vec())[i] = redacted;
            count += n;
        }
    }
    out.map(|o| (o, count))
}

/// The members of an object, by key. The memory is kept in place: a member remembered keeps
/// its key's string, only a new member's key is copied, and members gone from the object are
/// forgotten.
pub(super) fn members(
    memory: &mut HashMap<String, Seen<Value>>,
    map: &serde_json::Map<String, Value>,
    redact: impl Fn(&str, &Value) -> Option<(Value, u64)>,
) -> Option<(serde_json::Map<String, Value>, u64)> {
    let mut out: Option<serde_json::Map<String, Value>> = None;
    let mut count = 0;
    for (key, value) in map {
        // One lookup for a member remembered; its key's string is kept.
        let seen = memory.get_mut(key);
        let redacted = match seen.as_deref().and_then(|s| known(s, value)) {
            Some(outcome) => outcome,
            None => {
                let (out, remembered) = scan(value, |v| redact(key, v));
                match seen {
                    Some(seen) => *seen = remembered,
                    None => {
                        memory.insert(key.clone(), remembered);
                    }
                }
                out
            }
        };
        if let Some((redacted, n)) = redacted {
            out.get_or_insert_with(|| map.clone())
                .insert(key.clone(), redacted);
            count += n;
        }
    }
    // Every member of the object is remembered now: anything more is of members gone.
    if memory.len() > map.len() {
        memory.retain(|k, _| map.contains_key(k));
    }
    out.map(|o| (o, count))
}

/// What is remembered of one execution.
#[derive(Debug, Default)]
pub(super) struct Execution {
    pub thoughts: Vec<Option<Seen<Arc<Thought>>>>,
    pub calls: Vec<Option<Seen<Arc<ToolCall>>>>,
    pub history: Vec<Option<Seen<Value>>>,
    pub messages: Vec<Option<Seen<Value>>>,
    pub memory: Vec<Option<Seen<Value>>>,
    pub variables: HashMap<String, Seen<Value>>,
    pub state: HashMap<String, Seen<Value>>,
    pub results: HashMap<String, Seen<Value>>,
    pub steps: Vec<Option<Seen<CompletedStep>>>,
    pub plan: Vec<Option<Seen<PlanStep>>>,
}

/// The executions remembered, least recently redacted first dropped.
#[derive(Debug)]
pub(super) struct Memory {
    executions: HashMap<ExecutionId, Execution>,
    order: VecDeque<ExecutionId>,
    capacity: usize,
}

impl Memory {
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            executions: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Takes an execution's memory out (a fresh one if none), so that the scan runs without
    /// holding the lock; [`Memory::put`] brings it back.
    pub fn take(&mut self, exec: &ExecutionId) -> Execution {
        match self.executions.remove(exec) {
            Some(e) => {
                self.order.retain(|x| x != exec);
                e
            }
            None => Execution::default(),
        }
    }

    /// Remembers an execution again, forgetting the least recent one beyond the capacity.
    pub fn put(&mut self, exec: &ExecutionId, memory: Execution) {
        if self.executions.contains_key(exec) {
            // Another save of the same execution finished first: keep the newer one.
            return;
        }
        while self.order.len() >= self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.executions.remove(&old);
                }
                None => break,
            }
        }
        self.executions.insert(exec.clone(), memory);
        self.order.push_back(exec.clone());
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.executions.len()
    }
}
