//! A journal record that states a save as a **revision** of its execution's save before it.
//!
//! A journal record must be whole before its flush starts, and the flush is what a durable save
//! waits for. Journaling a save's text meant encoding the whole checkpoint (~140 KB at the
//! benchmark's step 100) and then finding how it differed from the save before
//! ([`crate::journal_delta`]) before the flush could start: about a third of a save's time on
//! the processor. Yet a step changes little of a checkpoint: its header, its context and
//! progress, and a thought and a tool call more. A revision states exactly that, at the level of
//! the model: the checkpoint without the thoughts and tool calls it shares with its base (the
//! first ones, the very same items), serialized compactly, a few KB. The store encodes the
//! checkpoint's text while the disk flushes the record.
//!
//! **Layout**: the base's record number (u64, little-endian), then JSON:
//! `{"base_id": …, "thoughts_kept": k, "calls_kept": m, "results_kept": [names…],
//! "checkpoint": …}`, the checkpoint without its first `k` thoughts and first `m` tool calls,
//! which are its base's, and without the tool results named in `results_kept`, which are its
//! base's too: identical values, a float and its sign included (the last result of each tool is
//! kept there, and a step replaces one: on the agent-run workload this halves the record, to
//! about 2.3 KB, so that most appends dirty one page of the slot rather than two or three).
//! A record written before `results_kept` existed has none, and reads as before. [`apply`]
//! checks that the base is the checkpoint the revision names and holds those items and results;
//! the record's own CRC-32 covers the rest. A revision rebuilds the very checkpoint that was
//! saved, so its file, encoded again, is byte for byte the one the store would have written.

use caf_core::format::{shared_prefix, Checked, Checkpoint};
use caf_core::{CheckpointId, ExecutionId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::VecDeque;

/// How many executions' last journaled checkpoint a store keeps, to journal their next save as
/// a revision.
const BASES: usize = 32;
/// The most text the checkpoints kept stand for (about the memory they hold apart from the items
/// they share with the agent's state).
const BASES_BYTES: usize = 32 << 20;

#[derive(Serialize)]
struct Written<'a> {
    base_id: &'a CheckpointId,
    thoughts_kept: usize,
    calls_kept: usize,
    results_kept: &'a [&'a str],
    checkpoint: &'a Checkpoint,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Read {
    base_id: CheckpointId,
    thoughts_kept: usize,
    calls_kept: usize,
    /// Absent in a record written before it existed.
    #[serde(default)]
    results_kept: Vec<String>,
    checkpoint: Checkpoint,
}

/// Why a revision cannot be applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum RevisionError {
    #[error("the revision is cut short")]
    Short,
    #[error("the revision is not readable: {0}")]
    Unreadable(String),
    #[error("the revision is of checkpoint {stated}, its base record holds {base}")]
    OtherBase { stated: String, base: String },
    #[error("the revision keeps {kept} {what}, its base has {has}")]
    Kept {
        what: &'static str,
        kept: usize,
        has: usize,
    },
    #[error("the revision keeps the result {0:?} of its base, which has none by that name, or states it too")]
    KeptResult(String),
}

/// Whether two JSON values are identical: equal, and written the same (`0.0` and `-0.0` are
/// equal numbers, written otherwise).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.is_f64(), y.is_f64()) {
            (true, true) => x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| identical(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| identical(v, w)))
        }
        _ => a == b,
    }
}

/// Appends to `out` the revision that makes `next` of `base`, which record `number` holds.
/// `next` is lent mutably only to leave its kept items out while it is serialized (no copy of
/// them): it is as it was when this returns.
pub(crate) fn encode_into(
    number: u64,
    base: &Checkpoint,
    next: &mut Checkpoint,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    // The very items `base` has first (the same pointer: an equal item would do but for
    // `-0.0`, equal to `0.0` yet written otherwise).
    let thoughts_kept = shared_prefix(
        &base.snapshot.thought_chain.thoughts,
        &next.snapshot.thought_chain.thoughts,
    );
    let calls_kept = shared_prefix(
        &base.snapshot.tool_state.calls,
        &next.snapshot.tool_state.calls,
    );
    // The results the base holds identically are moved out while the rest is written, and
    // back after.
    let in_base = |(name, value): &(String, Value)| {
        let base = base.snapshot.tool_state.results.get(name);
        base.is_some_and(|b| identical(b, value))
    };
    let (kept_results, written): (Vec<_>, Vec<_>) =
        std::mem::take(&mut next.snapshot.tool_state.results)
            .into_iter()
            .partition(in_base);
    next.snapshot.tool_state.results = written.into_iter().collect();
    let thoughts = std::mem::take(&mut next.snapshot.thought_chain.thoughts);
    let calls = std::mem::take(&mut next.snapshot.tool_state.calls);
    next.snapshot.thought_chain.thoughts = thoughts[thoughts_kept..].to_vec();
    next.snapshot.tool_state.calls = calls[calls_kept..].to_vec();
    out.extend_from_slice(&number.to_le_bytes());
    let names: Vec<&str> = kept_results.iter().map(|(name, _)| name.as_str()).collect();
    let written = serde_json::to_writer(
        &mut *out,
        &Written {
            base_id: &base.id,
            thoughts_kept,
            calls_kept,
            results_kept: &names,
            checkpoint: next,
        },
    );
    next.snapshot.thought_chain.thoughts = thoughts;
    next.snapshot.tool_state.calls = calls;
    next.snapshot.tool_state.results.extend(kept_results);
    written
}

/// The record number of the base `payload`, a revision, names.
pub(crate) fn base_of(payload: &[u8]) -> Result<u64, RevisionError> {
    let head = payload.first_chunk::<8>().ok_or(RevisionError::Short)?;
    Ok(u64::from_le_bytes(*head))
}

/// The checkpoint `payload`, a revision of `base`, states.
pub(crate) fn apply(base: &Checkpoint, payload: &[u8]) -> Result<Checkpoint, RevisionError> {
    let json = payload.get(8..).ok_or(RevisionError::Short)?;
    let read: Read =
        serde_json::from_slice(json).map_err(|e| RevisionError::Unreadable(e.to_string()))?;
    if read.base_id != base.id {
        return Err(RevisionError::OtherBase {
            stated: read.base_id.to_string(),
            base: base.id.to_string(),
        });
    }
    let mut next = read.checkpoint;
    let thoughts = &base.snapshot.thought_chain.thoughts;
    let calls = &base.snapshot.tool_state.calls;
    for (what, kept, has) in [
        ("thoughts", read.thoughts_kept, thoughts.len()),
        ("tool calls", read.calls_kept, calls.len()),
    ] {
        if kept > has {
            return Err(RevisionError::Kept { what, kept, has });
        }
    }
    let chain = &mut next.snapshot.thought_chain.thoughts;
    chain.splice(0..0, thoughts[..read.thoughts_kept].iter().cloned());
    let tool_calls = &mut next.snapshot.tool_state.calls;
    tool_calls.splice(0..0, calls[..read.calls_kept].iter().cloned());
    let results = &mut next.snapshot.tool_state.results;
    for name in read.results_kept {
        let Some(value) = base.snapshot.tool_state.results.get(&name) else {
            return Err(RevisionError::KeptResult(name));
        };
        if results.contains_key(&name) {
            return Err(RevisionError::KeptResult(name));
        }
        results.insert(name, value.clone());
    }
    Ok(next)
}

/// A checkpoint journaled last for its execution, which its next save may be a revision of.
#[derive(Debug)]
struct Base {
    /// The slot's epoch when it was journaled ([`crate::journal::Slot::epoch`]).
    epoch: u64,
    number: u64,
    checkpoint: Checked,
    /// The length of its text.
    bytes: usize,
}

/// The checkpoint journaled last for each of the executions saved last, least recently saved
/// first (at most [`BASES`], standing for at most [`BASES_BYTES`] of text).
#[derive(Debug, Default)]
pub(crate) struct Bases(VecDeque<Base>);

impl Bases {
    /// The record number and checkpoint journaled last for `execution` in the slot's `epoch`,
    /// taken out (kept again once the next record is appended).
    pub(crate) fn take(&mut self, execution: &ExecutionId, epoch: u64) -> Option<(u64, Checked)> {
        self.0.retain(|b| b.epoch == epoch);
        let at = self
            .0
            .iter()
            .position(|b| &b.checkpoint.get().execution_id == execution)?;
        self.0.remove(at).map(|b| (b.number, b.checkpoint))
    }

    /// Keeps `checkpoint`, whose text is `bytes` long, which record `number` of the slot's
    /// `epoch` holds.
    pub(crate) fn keep(&mut self, epoch: u64, number: u64, checkpoint: Checked, bytes: usize) {
        let execution = &checkpoint.get().execution_id;
        self.0
            .retain(|b| &b.checkpoint.get().execution_id != execution);
        if bytes > BASES_BYTES {
            return;
        }
        self.0.push_back(Base {
            epoch,
            number,
            checkpoint,
            bytes,
        });
        let mut total: usize = self.0.iter().map(|b| b.bytes).sum();
        while self.0.len() > BASES || total > BASES_BYTES {
            match self.0.pop_front() {
                Some(b) => total -= b.bytes,
                None => break,
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use caf_core::workload::agent_run_step;
    use caf_core::{CheckpointManager, CheckpointOptions, CheckpointReason, MemoryStore};
    use caf_core::{RuntimeState, Timestamp};
    use std::sync::Arc;

    /// The checkpoints of one execution after each of `steps` steps of the agent-run workload.
    pub(crate) fn steps(steps: usize) -> Vec<Checkpoint> {
        let manager = CheckpointManager::new(MemoryStore::new());
        let mut state = RuntimeState::new("agent");
        (1..=steps)
            .map(|s| {
                agent_run_step(&mut state, s).unwrap();
                let options = CheckpointOptions::new(CheckpointReason::StepCompleted);
                manager.checkpoint(&mut state, options).unwrap()
            })
            .collect()
    }

    fn revision(number: u64, base: &Checkpoint, next: &Checkpoint) -> Vec<u8> {
        let mut out = Vec::new();
        let mut lent = next.clone();
        encode_into(number, base, &mut lent, &mut out).unwrap();
        assert_eq!(&lent, next, "given back as it was");
        out
    }

    #[test]
    fn a_step_is_a_small_revision_that_rebuilds_the_very_checkpoint() {
        let cs = steps(40);
        let (base, next) = (&cs[38], &cs[39]);
        let payload = revision(7, base, next);
        let text = caf_core::format::encode(next).unwrap();
        assert!(
            payload.len() * 10 < text.len(),
            "{} bytes of revision for {} of text",
            payload.len(),
            text.len()
        );
        assert_eq!(base_of(&payload), Ok(7));
        let rebuilt = apply(base, &payload).unwrap();
        assert_eq!(&rebuilt, next);
        assert_eq!(caf_core::format::encode(&rebuilt).unwrap(), text);
    }

    /// The JSON of a revision record.
    fn stated(payload: &[u8]) -> serde_json::Value {
        serde_json::from_slice(&payload[8..]).unwrap()
    }

    #[test]
    fn tool_results_the_base_holds_identically_are_named_not_written() {
        let cs = steps(40);
        let (base, next) = (&cs[38], &cs[39]);
        let payload = revision(7, base, next);
        let said = stated(&payload);
        // Each of the five tools has its last result there; this step replaced one.
        let written = said["checkpoint"]["snapshot"]["tool_state"]["results"]
            .as_object()
            .unwrap();
        let step_tool = caf_core::workload::TOOLS[40 % 5];
        assert_eq!(written.keys().collect::<Vec<_>>(), [step_tool]);
        let kept: Vec<&str> = said["results_kept"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(kept.len(), 4);
        assert!(!kept.contains(&step_tool));
        assert_eq!(&apply(base, &payload).unwrap(), next);
    }

    #[test]
    fn a_result_equal_to_the_bases_but_written_otherwise_is_written() {
        let cs = steps(3);
        let (mut base, mut next) = (cs[1].clone(), cs[2].clone());
        base.snapshot
            .tool_state
            .results
            .insert("zero".into(), serde_json::json!({"v": [0.0]}));
        next.snapshot
            .tool_state
            .results
            .insert("zero".into(), serde_json::json!({"v": [-0.0]}));
        let payload = revision(1, &base, &next);
        let said = stated(&payload);
        assert!(said["checkpoint"]["snapshot"]["tool_state"]["results"]
            .get("zero")
            .is_some());
        let rebuilt = apply(&base, &payload).unwrap();
        assert_eq!(
            caf_core::format::encode(&rebuilt).unwrap(),
            caf_core::format::encode(&next).unwrap()
        );
        // The same value on both sides is kept.
        next.snapshot
            .tool_state
            .results
            .insert("zero".into(), serde_json::json!({"v": [0.0]}));
        let said = stated(&revision(1, &base, &next));
        assert!(said["results_kept"]
            .as_array()
            .unwrap()
            .contains(&"zero".into()));
    }

    #[test]
    fn a_record_from_before_results_were_kept_still_applies() {
        let cs = steps(6);
        // Of a base without results nothing is kept: the record states every result, as one
        // written before did, without naming any.
        let mut base = cs[4].clone();
        base.snapshot.tool_state.results.clear();
        let payload = revision(2, &base, &cs[5]);
        let mut said = stated(&payload);
        assert_eq!(said["results_kept"], serde_json::json!([]));
        said.as_object_mut().unwrap().remove("results_kept");
        let mut old = payload[..8].to_vec();
        serde_json::to_writer(&mut old, &said).unwrap();
        assert_eq!(&apply(&base, &old).unwrap(), &cs[5]);
    }

    #[test]
    fn a_revision_keeping_a_result_its_base_lacks_is_refused() {
        let cs = steps(8);
        let payload = revision(4, &cs[6], &cs[7]);
        let mut bare = cs[6].clone();
        bare.snapshot.tool_state.results.clear();
        assert!(matches!(
            apply(&bare, &payload),
            Err(RevisionError::KeptResult(_))
        ));
        // A record that names a result and states it too.
        let mut said = stated(&payload);
        let name = said["results_kept"][0].as_str().unwrap().to_owned();
        said["checkpoint"]["snapshot"]["tool_state"]["results"][&name] = "twice".into();
        let mut both = payload[..8].to_vec();
        serde_json::to_writer(&mut both, &said).unwrap();
        assert_eq!(apply(&cs[6], &both), Err(RevisionError::KeptResult(name)));
    }

    #[test]
    fn items_changed_removed_or_new_are_in_the_revision_and_rebuild() {
        let cs = steps(12);
        let base = &cs[10];
        let mut next = cs[11].clone();
        // A finished thought changes after all, and a tool call disappears.
        Arc::make_mut(&mut next.snapshot.thought_chain.thoughts[3])
            .content
            .push_str(" (revised)");
        next.snapshot.tool_state.calls.remove(5);
        next.timestamp = Timestamp::from_micros(1_767_000_000_000_000);
        assert_eq!(&apply(base, &revision(0, base, &next)).unwrap(), &next);
        // Fewer items than the base: nothing kept past the first that differs.
        let shorter = cs[2].clone();
        assert_eq!(
            &apply(base, &revision(0, base, &shorter)).unwrap(),
            &shorter
        );
        // Of a base of another execution: nothing kept at all.
        let other = steps(3);
        let payload = revision(0, &other[2], &next);
        let stated: serde_json::Value = serde_json::from_slice(&payload[8..]).unwrap();
        assert_eq!(
            (
                stated["thoughts_kept"].as_u64(),
                stated["calls_kept"].as_u64()
            ),
            (Some(0), Some(0))
        );
        assert_eq!(&apply(&other[2], &payload).unwrap(), &next);
    }

    #[test]
    fn a_revision_of_another_base_or_cut_short_is_refused() {
        let cs = steps(5);
        let payload = revision(3, &cs[3], &cs[4]);
        assert!(matches!(
            apply(&cs[2], &payload),
            Err(RevisionError::OtherBase { .. })
        ));
        // A base with the same id but fewer items than the revision keeps.
        let mut fewer = cs[3].clone();
        fewer.snapshot.thought_chain.thoughts.truncate(1);
        assert_eq!(
            apply(&fewer, &payload),
            Err(RevisionError::Kept {
                what: "thoughts",
                kept: 4,
                has: 1
            })
        );
        assert_eq!(base_of(&payload[..5]), Err(RevisionError::Short));
        assert_eq!(apply(&cs[3], &payload[..7]), Err(RevisionError::Short));
        assert!(matches!(
            apply(&cs[3], &payload[..payload.len() - 1]),
            Err(RevisionError::Unreadable(_))
        ));
    }

    #[test]
    fn bases_are_of_the_slots_epoch_one_per_execution_and_at_most_their_number() {
        let mut bases = Bases::default();
        let checked = |c: Checkpoint| Checked::new(c).unwrap();
        let a: Vec<Checked> = steps(2).into_iter().map(checked).collect();
        bases.keep(1, 0, a[0].clone(), 100);
        bases.keep(1, 1, a[1].clone(), 100);
        let exec = &a[0].get().execution_id;
        assert_eq!(bases.take(exec, 2), None, "of another epoch");
        bases.keep(2, 5, a[1].clone(), 100);
        assert_eq!(bases.take(exec, 2), Some((5, a[1].clone())));
        assert_eq!(bases.take(exec, 2), None, "taken out");
        for n in 0..=BASES as u64 {
            let c = checked(steps(1).remove(0));
            bases.keep(3, n, c, 100);
        }
        assert_eq!(bases.0.len(), BASES);
        assert_eq!(bases.0[0].number, 1, "the least recently kept went first");
        // At most their bytes: a large one pushes out the oldest, one too large is not kept.
        bases.keep(3, 100, checked(steps(1).remove(0)), BASES_BYTES - 100);
        assert_eq!(bases.0.len(), 2);
        bases.keep(3, 101, checked(steps(1).remove(0)), BASES_BYTES + 1);
        assert_eq!(bases.0.len(), 2);
    }
}
