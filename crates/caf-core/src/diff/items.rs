//! Thoughts and tool calls: matched by id, then compared field by field.

use super::types::{Change, FromTo, Op, ThoughtChange, ToolCallChange, ToolCallCompletion};
use super::walk;
use crate::format::{Thought, ToolCall, ToolStatus};
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Two lists matched by id.
struct Matched<'a, T> {
    /// Items only in the new list, in its order.
    added: Vec<&'a T>,
    /// Items only in the old list, in its order.
    removed: Vec<&'a T>,
    /// Matched pairs `(old, new)` that are not equal, in the new list's order.
    differ: Vec<(&'a T, &'a T)>,
}

/// Matches the n-th occurrence of an id in `old` with its n-th occurrence in `new`.
///
/// The common prefix (the usual case: a chain that only grew) is skipped with `==`; the rest is
/// indexed by id in a hash map, so the cost is linear in the lengths.
fn match_by_id<'a, T: PartialEq>(
    old: &'a [T],
    new: &'a [T],
    id: impl Fn(&T) -> &str,
) -> Matched<'a, T> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[prefix..], &new[prefix..]);
    let mut by_id: HashMap<&str, VecDeque<usize>> = HashMap::with_capacity(old.len());
    for (i, a) in old.iter().enumerate() {
        by_id.entry(id(a)).or_default().push_back(i);
    }
    let mut taken = vec![false; old.len()];
    let mut m = Matched {
        added: Vec::new(),
        removed: Vec::new(),
        differ: Vec::new(),
    };
    for b in new {
        match by_id.get_mut(id(b)).and_then(VecDeque::pop_front) {
            Some(i) => {
                taken[i] = true;
                if old[i] != *b {
                    m.differ.push((&old[i], b));
                }
            }
            None => m.added.push(b),
        }
    }
    m.removed = old
        .iter()
        .zip(&taken)
        .filter(|(_, &t)| !t)
        .map(|(a, _)| a)
        .collect();
    m
}

/// A value as JSON (`null` if it cannot be represented, which the model's types never are).
fn json(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The field changes between two versions of an item, paths relative to the item.
fn changes(old: &impl Serialize, new: &impl Serialize) -> Vec<Change> {
    let mut out = Vec::new();
    walk::values(&json(old), &json(new), &mut String::new(), &mut out);
    out
}

/// Thoughts added, removed and changed.
pub fn thoughts(
    old: &[Arc<Thought>],
    new: &[Arc<Thought>],
) -> (Vec<Thought>, Vec<Thought>, Vec<ThoughtChange>) {
    if old == new {
        return Default::default();
    }
    let m = match_by_id(old, new, |t| t.id.as_str());
    let changed = m
        .differ
        .into_iter()
        .filter_map(|(a, b)| {
            let changes = changes(a, b);
            (!changes.is_empty()).then(|| ThoughtChange {
                id: b.id.clone(),
                changes,
            })
        })
        .collect();
    (
        m.added.into_iter().map(|t| Thought::clone(t)).collect(),
        m.removed.into_iter().map(|t| Thought::clone(t)).collect(),
        changed,
    )
}

/// Whether the change from `a` to `b` is a call's result arriving.
fn is_completion(a: &ToolCall, b: &ToolCall) -> bool {
    let waiting = matches!(a.status, ToolStatus::Pending | ToolStatus::Running);
    let done = matches!(b.status, ToolStatus::Completed | ToolStatus::Failed);
    (waiting && done) || (a.result.is_none() && b.result.is_some())
}

/// What [`tool_calls`] finds.
pub type ToolCallDeltas = (Vec<ToolCall>, Vec<ToolCallCompletion>, Vec<ToolCallChange>);

/// Tool calls added, completed, and otherwise changed (removed calls included).
pub fn tool_calls(old: &[Arc<ToolCall>], new: &[Arc<ToolCall>]) -> ToolCallDeltas {
    if old == new {
        return Default::default();
    }
    let m = match_by_id(old, new, |c| c.id.as_str());
    let mut completed = Vec::new();
    let mut changed = Vec::new();
    for (a, b) in m.differ {
        let changes = changes(a, b);
        if changes.is_empty() {
            continue;
        }
        if is_completion(a, b) {
            completed.push(ToolCallCompletion {
                id: b.id.clone(),
                tool_id: b.tool_id.clone(),
                status: FromTo {
                    from: a.status,
                    to: b.status,
                },
                result: b.result.clone(),
                error: b.error.clone(),
                changes,
            });
        } else {
            changed.push(ToolCallChange {
                id: b.id.clone(),
                tool_id: b.tool_id.clone(),
                op: Op::Changed,
                changes,
            });
        }
    }
    for a in m.removed {
        changed.push(ToolCallChange {
            id: a.id.clone(),
            tool_id: a.tool_id.clone(),
            op: Op::Removed,
            changes: vec![walk::change("", Some(&json(a)), None)],
        });
    }
    let added = m.added.into_iter().map(|c| ToolCall::clone(c)).collect();
    (added, completed, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_duplicate_ids_in_order() {
        let old = [("a", 1), ("b", 2), ("a", 3)];
        let new = [("b", 2), ("a", 1), ("a", 4), ("c", 5)];
        let m = match_by_id(&old, &new, |x| x.0);
        assert_eq!(m.added, vec![&("c", 5)]);
        assert!(m.removed.is_empty());
        assert_eq!(m.differ, vec![(&("a", 3), &("a", 4))]);
    }

    #[test]
    fn skips_the_common_prefix() {
        let old = [("a", 1), ("b", 2)];
        let new = [("a", 1), ("b", 2), ("c", 3)];
        let m = match_by_id(&old, &new, |x| x.0);
        assert_eq!(m.added, vec![&("c", 3)]);
        assert!(m.removed.is_empty() && m.differ.is_empty());
        let m = match_by_id(&new, &old, |x| x.0);
        assert_eq!(m.removed, vec![&("c", 3)]);
    }
}
