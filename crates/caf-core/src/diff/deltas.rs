//! The context, progress and metadata sections of a diff.

use super::types::{Change, Counter, FromTo, MetadataDelta, PendingDelta, ProgressDelta};
use super::walk;
use crate::format::{Checkpoint, CompletedStep, Context, Progress};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::Hash;

/// Changes inside the context: variables, state, history, messages, memory (in that order).
pub fn context(old: &Context, new: &Context) -> Vec<Change> {
    let mut out = Vec::new();
    if old == new {
        return out;
    }
    let mut path = String::new();
    path.push_str("/variables");
    walk::objects(&old.variables, &new.variables, &mut path, &mut out);
    path.clear();
    path.push_str("/state");
    walk::objects(&old.state, &new.state, &mut path, &mut out);
    for (name, a, b) in [
        ("/history", &old.history, &new.history),
        ("/messages", &old.messages, &new.messages),
        ("/memory", &old.memory, &new.memory),
    ] {
        path.clear();
        path.push_str(name);
        walk::arrays(a, b, &mut path, &mut out);
    }
    out
}

/// The items of `items` that have no equal counterpart in `other` (each item of `other`
/// matches at most one), in order. Items are bucketed by `key`, so the cost is linear.
fn minus<'a, T: PartialEq, K: Hash + Eq>(
    items: &'a [T],
    other: &'a [T],
    key: impl Fn(&'a T) -> K,
) -> Vec<&'a T> {
    let mut buckets: HashMap<K, Vec<(usize, bool)>> = HashMap::with_capacity(other.len());
    for (i, o) in other.iter().enumerate() {
        buckets.entry(key(o)).or_default().push((i, false));
    }
    items
        .iter()
        .filter(|item| {
            let Some(bucket) = buckets.get_mut(&key(item)) else {
                return true;
            };
            match bucket
                .iter_mut()
                .find(|(i, used)| !*used && other.get(*i) == Some(*item))
            {
                Some(slot) => {
                    slot.1 = true;
                    false
                }
                None => true,
            }
        })
        .collect()
}

fn step_key(s: &CompletedStep) -> (&str, crate::clock::Timestamp) {
    (s.name.as_str(), s.completed_at)
}

/// How progress moved.
pub fn progress(old: &Progress, new: &Progress) -> ProgressDelta {
    let mut d = ProgressDelta {
        step_number: Counter::new(old.step_number, new.step_number),
        total_steps: FromTo {
            from: old.total_steps,
            to: new.total_steps,
        },
        iterations_completed: Counter::new(old.iterations_completed, new.iterations_completed),
        steps_completed: Vec::new(),
        steps_reverted: Vec::new(),
        pending_steps: None,
    };
    if old.completed_steps != new.completed_steps {
        // Completed steps are usually appended: skip the common prefix before matching.
        let p = old
            .completed_steps
            .iter()
            .zip(&new.completed_steps)
            .take_while(|(a, b)| a == b)
            .count();
        let (a, b) = (&old.completed_steps[p..], &new.completed_steps[p..]);
        d.steps_completed = minus(b, a, step_key).into_iter().cloned().collect();
        d.steps_reverted = minus(a, b, step_key).into_iter().cloned().collect();
    }
    if old.pending_steps != new.pending_steps {
        let (a, b) = (&old.pending_steps, &new.pending_steps);
        d.pending_steps = Some(PendingDelta {
            from: a.clone(),
            to: b.clone(),
            added: minus(b, a, |s| s.as_str()).into_iter().cloned().collect(),
            removed: minus(a, b, |s| s.as_str()).into_iter().cloned().collect(),
        });
    }
    d
}

fn json(v: &impl Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Records a change of a field that is always present.
fn field<T: Serialize + PartialEq>(path: &str, old: &T, new: &T, out: &mut Vec<Change>) {
    if old != new {
        walk::values(&json(old), &json(new), &mut path.to_string(), out);
    }
}

/// Records a change of an optional field (absent → present is `added`).
fn opt_field<T: Serialize + PartialEq>(
    path: &str,
    old: Option<&T>,
    new: Option<&T>,
    out: &mut Vec<Change>,
) {
    if old != new {
        let (a, b) = (old.map(json), new.map(json));
        walk::options(a.as_ref(), b.as_ref(), &mut path.to_string(), out);
    }
}

/// The metadata fields that [`MetadataDelta`] reports in its own members.
const COVERED: [&str; 3] = ["checkpoint_reason", "duration_ms", "tokens_used"];

/// Records the changes of the metadata members that have no member of their own in
/// [`MetadataDelta`].
fn metadata_members(old: &Checkpoint, new: &Checkpoint, out: &mut Vec<Change>) {
    let (ma, mb) = (&old.metadata, &new.metadata);
    let (Value::Object(mut a), Value::Object(mut b)) = (json(ma), json(mb)) else {
        return; // never: metadata serializes to an object
    };
    for k in COVERED {
        a.remove(k);
        b.remove(k);
    }
    // The metadata step is a copy of the progress step: report it only if it moved differently.
    let (pa, pb) = (&old.snapshot.progress, &new.snapshot.progress);
    if (ma.step_number, mb.step_number) == (pa.step_number, pb.step_number) {
        a.remove("step_number");
        b.remove("step_number");
    }
    walk::objects(&a, &b, &mut String::from("/metadata"), out);
}

/// How the metadata, and every part of the checkpoint no other section covers, moved.
pub fn metadata(old: &Checkpoint, new: &Checkpoint) -> MetadataDelta {
    let (ma, mb) = (&old.metadata, &new.metadata);
    let mut out = Vec::new();
    field("/$schema", &old.schema, &new.schema, &mut out);
    field("/version", &old.version, &new.version, &mut out);
    field("/agent_id", &old.agent_id, &new.agent_id, &mut out);
    field(
        "/execution_id",
        &old.execution_id,
        &new.execution_id,
        &mut out,
    );
    let (pa, pb) = (old.parent_id.as_ref(), new.parent_id.as_ref());
    opt_field("/parent_id", pa, pb, &mut out);
    field("/timestamp", &old.timestamp, &new.timestamp, &mut out);
    let mut path = String::from("/extensions");
    walk::objects(&old.extensions, &new.extensions, &mut path, &mut out);
    if ma != mb {
        metadata_members(old, new, &mut out);
    }
    let (ta, tb) = (&old.snapshot.thought_chain, &new.snapshot.thought_chain);
    opt_field(
        "/snapshot/thought_chain/current_thought_id",
        ta.current_thought_id.as_ref(),
        tb.current_thought_id.as_ref(),
        &mut out,
    );
    let (sa, sb) = (&old.snapshot.tool_state, &new.snapshot.tool_state);
    opt_field(
        "/snapshot/tool_state/last_call_id",
        sa.last_call_id.as_ref(),
        sb.last_call_id.as_ref(),
        &mut out,
    );
    let mut path = String::from("/snapshot/tool_state/results");
    walk::objects(&sa.results, &sb.results, &mut path, &mut out);
    MetadataDelta {
        tokens_used: Counter::new(ma.tokens_used, mb.tokens_used),
        duration_ms: Counter::new(ma.duration_ms, mb.duration_ms),
        reason: FromTo {
            from: ma.checkpoint_reason.clone(),
            to: mb.checkpoint_reason.clone(),
        },
        changes: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_is_a_multiset_difference() {
        let a = ["x", "y", "x", "z"];
        let b = ["x", "z", "w"];
        assert_eq!(minus(&a, &b, |s| *s), vec![&"y", &"x"]);
        assert_eq!(minus(&b, &a, |s| *s), vec![&"w"]);
    }
}
