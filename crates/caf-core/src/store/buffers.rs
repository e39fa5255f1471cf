//! [`Buffers`]: the memory of files a store has written, kept for its next encodings.
//!
//! A checkpoint's encoding is one buffer as long as its file (169 KB at the agent-run
//! workload's last step, ~420 KB after 250 steps). Allocated for each save and freed by another
//! thread (a journal's writer, a hybrid store's stager), such a buffer kept coming from pages
//! the allocator had just taken from the kernel, each cleared on its first touch: `perf` showed
//! a fifth of the CPU of eight default-mode writers clearing pages (docs/benchmarks.md). A
//! store keeps the buffers its writers are done with and encodes into them: up to sixteen, so
//! that a journal's writer that is behind (several saves queued, each holding its buffer) gives
//! back enough for the saves that come meanwhile (with four, eight writers still spent a tenth
//! of their encoding in page faults), and at most 16 MiB in all.

use std::sync::Mutex;

/// How many buffers are kept.
const KEPT: usize = 16;
/// The largest buffer kept: a store that once wrote a huge checkpoint does not hold its memory.
const MAX_KEPT: usize = 4 << 20;
/// The most memory the kept buffers hold together.
const KEPT_BYTES: usize = 16 << 20;

/// Buffers given back, in no order.
#[derive(Debug, Default)]
pub(crate) struct Buffers(Mutex<Vec<Vec<u8>>>);

impl Buffers {
    /// A buffer to encode into: the largest kept (encodings grow with their execution), or a
    /// new one.
    pub(crate) fn take(&self) -> Vec<u8> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let largest = (0..kept.len()).max_by_key(|&i| kept[i].capacity());
        largest.map(|i| kept.swap_remove(i)).unwrap_or_default()
    }

    /// Keeps `bytes`'s memory for a later [`Buffers::take`] (in place of the smallest kept
    /// when enough are, or when they would hold too much together), unless it is too large.
    pub(crate) fn give_back(&self, mut bytes: Vec<u8>) {
        if bytes.capacity() == 0 || bytes.capacity() > MAX_KEPT {
            return;
        }
        bytes.clear();
        // Declared after `bytes`: unlocked before a buffer not kept is freed.
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let held: usize = kept.iter().map(Vec::capacity).sum();
        if kept.len() < KEPT && held + bytes.capacity() <= KEPT_BYTES {
            kept.push(bytes);
        } else if let Some(smallest) = kept.iter_mut().min_by_key(|b| b.capacity()) {
            let instead = held - smallest.capacity() + bytes.capacity();
            if smallest.capacity() < bytes.capacity() && instead <= KEPT_BYTES {
                std::mem::swap(smallest, &mut bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty_with_its_memory() {
        let buffers = Buffers::default();
        let mut bytes = Vec::with_capacity(1000);
        bytes.extend_from_slice(b"a file");
        let at = bytes.as_ptr();
        buffers.give_back(bytes);
        let again = buffers.take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), at);
        assert!(again.capacity() >= 1000);
        // None kept now: a new, empty buffer.
        assert_eq!(buffers.take().capacity(), 0);
    }

    #[test]
    fn only_a_few_buffers_of_a_bounded_size_are_kept() {
        let buffers = Buffers::default();
        buffers.give_back(Vec::with_capacity(MAX_KEPT + 1));
        assert_eq!(buffers.take().capacity(), 0);
        for _ in 0..KEPT + 2 {
            buffers.give_back(Vec::with_capacity(64));
        }
        buffers.give_back(Vec::with_capacity(4096));
        let kept: Vec<usize> = std::iter::from_fn(|| Some(buffers.take().capacity()))
            .take_while(|&c| c > 0)
            .collect();
        // The largest first; the larger buffer took a small one's place.
        assert_eq!(kept.len(), KEPT);
        assert!(kept[0] >= 4096 && kept[1..].iter().all(|&c| (64..4096).contains(&c)));
    }

    #[test]
    fn the_buffers_kept_hold_a_bounded_memory_in_all() {
        let buffers = Buffers::default();
        for _ in 0..KEPT {
            buffers.give_back(Vec::with_capacity(MAX_KEPT));
        }
        let kept: Vec<usize> = std::iter::from_fn(|| Some(buffers.take().capacity()))
            .take_while(|&c| c > 0)
            .collect();
        assert_eq!(kept.len(), KEPT_BYTES / MAX_KEPT);
        assert!(kept.iter().sum::<usize>() <= KEPT_BYTES);
    }

    #[test]
    fn a_file_store_encodes_into_the_buffer_given_back_and_the_bytes_are_the_same() {
        use crate::store::{CheckpointStore, FileStore};
        use crate::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(FileStore::open(dir.path()).unwrap());
        let m = CheckpointManager::new(std::sync::Arc::clone(&store));
        let mut state = RuntimeState::new("agent");
        state.set_variable("note", serde_json::json!("x".repeat(3000)));
        let c = m
            .checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::Manual))
            .unwrap();
        let first = store.encode(&c).unwrap();
        let given = Vec::<u8>::with_capacity(first.len().max(64 * 1024));
        let at = given.as_ptr();
        store.give_back(given);
        let again = store.encode(&c).unwrap();
        assert_eq!(again.as_ptr(), at, "encoded into the buffer given back");
        assert_eq!(again, first);
        assert_eq!(again, crate::format::encode(&c).unwrap());
        // A save encodes into it too, and gives it back once its file is written.
        store.give_back(again);
        store.save(&c).unwrap();
        let kept = store.buffers.take();
        assert_eq!(kept.as_ptr(), at);
    }

    #[test]
    fn an_encoder_clears_the_buffer_it_is_given() {
        use crate::format::Encoder;
        use crate::{CheckpointManager, CheckpointOptions, CheckpointReason, RuntimeState};
        let m = CheckpointManager::new(std::sync::Arc::new(crate::MemoryStore::new()));
        let mut state = RuntimeState::new("agent");
        let c = m
            .checkpoint(&mut state, CheckpointOptions::new(CheckpointReason::Manual))
            .unwrap();
        let mut encoder = Encoder::default();
        for given in [b"stale bytes".to_vec(), vec![b'x'; 1 << 20]] {
            let unsealed = encoder.encode_unsealed_into(&c, given).unwrap();
            assert_eq!(unsealed.seal(), crate::format::encode(&c).unwrap());
        }
    }
}
