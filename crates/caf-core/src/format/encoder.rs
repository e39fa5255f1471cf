//! [`Encoder`]: [`super::encode`] with a memory of the items it has written.
//!
//! A finished thought or tool call rarely changes, yet each save of a growing checkpoint used to
//! serialize all of them again (most of its bytes). An encoder keeps, per execution, the
//! canonical text of each thought and tool call it wrote, beside the item (shared, an [`Arc`]:
//! remembering it copies nothing); the next encoding of that execution splices in the text of
//! every item still the same — the very item, as a runtime state shares its unchanged items
//! with every checkpoint taken of it, or an equal one (a comparison costs far less than
//! escaping and formatting) —, and serializes only the others.
//! The bytes are exactly [`super::encode`]'s (tests check it on every workload and golden file).
//!
//! The splice happens inside serde: the model's `thoughts` and `calls` fields serialize through
//! [`thoughts`] and [`tool_calls`], which use the memory of the encoding in progress on this
//! thread, if any, and serialize normally otherwise.

use super::check::{check, Checked};
use super::codec::{write_unsealed_into, Unsealed};
use super::error::EncodeError;
use super::model::{same, Checkpoint, Thought, ToolCall};
use crate::id::ExecutionId;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The indent of an item of `snapshot.thought_chain.thoughts` or `snapshot.tool_state.calls` in
/// the canonical text (four levels of two spaces).
const ITEM_INDENT: &str = "        ";

/// How many executions an encoder remembers by default.
const EXECUTIONS: usize = 32;

/// The canonical text of items at [`ITEM_INDENT`], with each item.
#[derive(Debug, Default)]
struct Items {
    thoughts: Vec<(Arc<Thought>, Box<RawValue>)>,
    calls: Vec<(Arc<ToolCall>, Box<RawValue>)>,
    /// The length of the last encoding (the next one is about as long).
    len: usize,
}

thread_local! {
    /// The memory of the encoding in progress on this thread.
    static ACTIVE: RefCell<Option<Items>> = const { RefCell::new(None) };
}

/// The least room an encoding is given (a first encoding, of an execution not seen before).
const MIN_BUFFER: usize = 16 * 1024;

/// Encodes checkpoints as [`super::encode`] does, remembering the text of their thoughts and
/// tool calls (see the module docs). One per store; not shared between threads at once.
#[derive(Debug)]
pub struct Encoder {
    executions: HashMap<ExecutionId, Items>,
    /// Least recently encoded first.
    order: VecDeque<ExecutionId>,
    capacity: usize,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::with_capacity(EXECUTIONS)
    }
}

impl Encoder {
    /// An encoder that remembers the items of up to `executions` executions.
    pub fn with_capacity(executions: usize) -> Self {
        Self {
            executions: HashMap::new(),
            order: VecDeque::new(),
            capacity: executions.max(1),
        }
    }

    /// The file bytes of `ckpt`: exactly [`super::encode`]`(ckpt)`.
    pub fn encode(&mut self, ckpt: &Checkpoint) -> Result<Vec<u8>, EncodeError> {
        self.encode_unsealed(ckpt).map(Unsealed::seal)
    }

    /// [`Encoder::encode`] but for the checksum ([`super::encode_unsealed`]).
    pub fn encode_unsealed(&mut self, ckpt: &Checkpoint) -> Result<Unsealed, EncodeError> {
        self.encode_unsealed_into(ckpt, Vec::new())
    }

    /// [`Encoder::encode_unsealed`] into `text`, a buffer whose content is cleared and whose
    /// memory is reused (a store's buffers given back, `store/buffers.rs`).
    pub fn encode_unsealed_into(
        &mut self,
        ckpt: &Checkpoint,
        text: Vec<u8>,
    ) -> Result<Unsealed, EncodeError> {
        check(ckpt)?;
        self.write_into(ckpt, text)
    }

    /// [`Encoder::encode_unsealed_into`] of a checkpoint [`check`] accepted, not checked again.
    pub fn encode_checked_into(
        &mut self,
        ckpt: &Checked,
        text: Vec<u8>,
    ) -> Result<Unsealed, EncodeError> {
        self.write_into(ckpt.get(), text)
    }

    fn write_into(
        &mut self,
        ckpt: &Checkpoint,
        mut text: Vec<u8>,
    ) -> Result<Unsealed, EncodeError> {
        let exec = &ckpt.execution_id;
        let items = match self.executions.remove(exec) {
            Some(items) => {
                self.order.retain(|e| e != exec);
                items
            }
            None => Items::default(),
        };
        // This encoding is about as long as the execution's last, plus a thought and a tool
        // call: a buffer with that much room serves (growing one would copy its bytes). A new
        // one gets twice the room, so that once given back it serves the saves that follow
        // until their encodings have nearly doubled (with only the room this one needs, a
        // buffer given back was always a little too small for the next, longer encoding, and
        // every save took fresh pages; with a quarter more, eight writers whose writers were
        // behind still took a new buffer for half their saves).
        if text.capacity() < (items.len + items.len / 16).max(MIN_BUFFER) {
            text = Vec::with_capacity((items.len * 2).max(MIN_BUFFER));
        }
        ACTIVE.with(|a| *a.borrow_mut() = Some(items));
        let bytes = write_unsealed_into(ckpt, text);
        let mut items = ACTIVE.with(|a| a.borrow_mut().take()).unwrap_or_default();
        if let Ok(bytes) = &bytes {
            items.len = bytes.len();
            if self.order.len() >= self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.executions.remove(&old);
                }
            }
            self.executions.insert(exec.clone(), items);
            self.order.push_back(exec.clone());
        }
        bytes
    }
}

/// Brings `memory` in line with `items` (reusing the text of every item the same as the one
/// remembered), then writes them.
fn spliced<T, S>(
    items: &[Arc<T>],
    memory: &mut Vec<(Arc<T>, Box<RawValue>)>,
    s: S,
) -> Result<S::Ok, S::Error>
where
    T: Serialize + PartialEq,
    S: Serializer,
{
    memory.truncate(items.len());
    for (i, item) in items.iter().enumerate() {
        if memory.get(i).is_some_and(|(known, _)| same(known, item)) {
            continue;
        }
        let text = indented(item).map_err(serde::ser::Error::custom)?;
        let entry = (item.clone(), text);
        if i < memory.len() {
            memory[i] = entry;
        } else {
            memory.push(entry);
        }
    }
    s.collect_seq(memory.iter().map(|(_, text)| text))
}

/// The most of its memory the buffer of [`indented`] keeps between items.
const SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    /// Where [`indented`] serializes an item before indenting it (reused: growing a new buffer
    /// for each item cost more than serializing it).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The canonical text of `item` as it appears at [`ITEM_INDENT`].
fn indented<T: Serialize>(item: &T) -> serde_json::Result<Box<RawValue>> {
    let mut buf = SCRATCH.with(|s| s.take());
    buf.clear();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut buf,
        serde_json::ser::PrettyFormatter::with_indent(b"  "),
    );
    let text = item.serialize(&mut ser).and_then(|()| {
        let plain = std::str::from_utf8(&buf).map_err(serde::ser::Error::custom)?;
        // JSON strings never hold a raw newline: every newline is layout.
        let newlines = plain.bytes().filter(|b| *b == b'\n').count();
        let mut text = String::with_capacity(plain.len() + newlines * ITEM_INDENT.len());
        let mut lines = plain.split('\n');
        if let Some(first) = lines.next() {
            text.push_str(first);
        }
        for line in lines {
            text.push('\n');
            text.push_str(ITEM_INDENT);
            text.push_str(line);
        }
        Ok(text)
    });
    if buf.capacity() <= SCRATCH_KEPT {
        SCRATCH.with(|s| s.replace(buf));
    }
    RawValue::from_string(text?)
}

fn with_memory<T, S>(
    items: &[Arc<T>],
    s: S,
    slot: impl FnOnce(&mut Items) -> &mut Vec<(Arc<T>, Box<RawValue>)>,
) -> Result<S::Ok, S::Error>
where
    T: Serialize + PartialEq,
    S: Serializer,
{
    let memory = ACTIVE.with(|a| a.try_borrow_mut().ok().and_then(|mut m| m.take()));
    match memory {
        Some(mut memory) => {
            let out = spliced(items, slot(&mut memory), s);
            ACTIVE.with(|a| *a.borrow_mut() = Some(memory));
            out
        }
        None => s.collect_seq(items),
    }
}

/// Serializes `snapshot.thought_chain.thoughts` (with the memory of an [`Encoder`] at work).
pub(crate) fn thoughts<S: Serializer>(items: &[Arc<Thought>], s: S) -> Result<S::Ok, S::Error> {
    with_memory(items, s, |m| &mut m.thoughts)
}

/// Serializes `snapshot.tool_state.calls` (with the memory of an [`Encoder`] at work).
pub(crate) fn tool_calls<S: Serializer>(items: &[Arc<ToolCall>], s: S) -> Result<S::Ok, S::Error> {
    with_memory(items, s, |m| &mut m.calls)
}

#[cfg(all(test, feature = "test-support"))]
mod tests {
    use super::*;
    use crate::clock::SimulatedClock;
    use crate::format::encode;
    use crate::workload::agent_run_step;
    use crate::{CheckpointManager, MemoryStore, RuntimeState};
    use std::sync::Arc;

    #[test]
    fn a_buffer_given_back_serves_the_next_longer_encoding_of_its_execution() {
        let m = CheckpointManager::new(Arc::new(MemoryStore::new()));
        let mut encoder = Encoder::default();
        let mut state = RuntimeState::new("agent");
        let (mut given, mut fresh) = (Vec::new(), Vec::new());
        for s in 1..=30 {
            agent_run_step(&mut state, s).unwrap();
            let options =
                crate::CheckpointOptions::new(crate::format::CheckpointReason::StepCompleted);
            let c = m.checkpoint(&mut state, options).unwrap();
            let at = given.as_ptr();
            let bytes = encoder.encode_unsealed_into(&c, given).unwrap().seal();
            assert_eq!(bytes, encode(&c).unwrap());
            if bytes.as_ptr() != at {
                fresh.push(s);
            }
            given = bytes;
        }
        // A buffer made for one save, given back, holds the next ones, each longer by a step:
        // a new one only now and then (it was every save when a buffer had room for the save
        // it was made for and no more).
        assert!(fresh.len() <= 6, "new buffers at steps {fresh:?}");
    }

    #[test]
    fn encodes_exactly_as_encode_does_as_items_grow_change_and_vanish() {
        let m = CheckpointManager::new(Arc::new(MemoryStore::new()));
        let mut encoder = Encoder::with_capacity(2);
        for e in 0..3 {
            let exec = ExecutionId::new(format!("exec_{e}")).unwrap();
            let clock = Arc::new(SimulatedClock::starting_at(crate::Timestamp::from_micros(
                1_767_000_000_000_000,
            )));
            let mut state = RuntimeState::with_clock("agent", exec, clock);
            for s in 0..12 {
                agent_run_step(&mut state, s).unwrap();
                let options =
                    crate::CheckpointOptions::new(crate::format::CheckpointReason::StepCompleted);
                let mut c = m.checkpoint(&mut state, options).unwrap();
                if s == 6 {
                    // A finished item changes after all, and another one disappears.
                    Arc::make_mut(&mut c.snapshot.thought_chain.thoughts[0])
                        .content
                        .push_str(" (revised)");
                    c.snapshot.tool_state.calls.remove(1);
                }
                assert_eq!(
                    encoder.encode(&c).unwrap(),
                    encode(&c).unwrap(),
                    "exec {e} step {s}"
                );
            }
        }
        assert_eq!(
            encoder.executions.len(),
            2,
            "remembers at most its capacity"
        );
    }

    #[test]
    fn a_checked_checkpoint_encodes_as_any_and_an_invalid_one_is_not_checked() {
        let m = CheckpointManager::new(Arc::new(MemoryStore::new()));
        let mut state = RuntimeState::new("agent");
        agent_run_step(&mut state, 1).unwrap();
        let options = crate::CheckpointOptions::new(crate::format::CheckpointReason::StepCompleted);
        let c = m.checkpoint(&mut state, options).unwrap();
        let checked = Checked::new(c.clone()).unwrap();
        let bytes = Encoder::default()
            .encode_checked_into(&checked, Vec::new())
            .unwrap()
            .seal();
        assert_eq!(bytes, encode(&c).unwrap());
        let mut bad = c;
        bad.version = "0.9.0".into();
        let refused = Checked::new(bad.clone()).unwrap_err();
        assert_eq!(Encoder::default().encode(&bad).unwrap_err(), refused);
    }

    #[test]
    fn outside_an_encoder_items_serialize_as_always() {
        let mut state = RuntimeState::new("agent");
        agent_run_step(&mut state, 0).unwrap();
        let chain = state.snapshot().thought_chain.clone();
        let direct = serde_json::to_string(&chain.thoughts.iter().collect::<Vec<_>>()).unwrap();
        let via_field = serde_json::to_value(&chain).unwrap()["thoughts"].to_string();
        assert_eq!(via_field, direct);
    }
}
