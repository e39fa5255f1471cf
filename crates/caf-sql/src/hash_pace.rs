//! [`HashPace`]: whether a journaled save hashes its file while the disk flushes its record.
//!
//! A journaled save appends its record (mostly a revision) and waits for the flush, while the
//! store's helper thread (or the saving thread itself, when the record is written directly)
//! encodes the file's text; the file's checksum (SHA-256 of the document) is computed either by
//! the store's writer thread, later, or by that thread right after the text, during that wait,
//! while the bytes are still in its core's cache. The writer is best when it
//! is idle and a core is free for it: the save then does not wait for the hash. When saves come
//! faster than the writer writes them (many agents on few cores), hashing during the flush
//! takes that work off the writer, at no cost to the save as long as the flush outlasts the
//! hash.
//!
//! The rule: hash during the flush when the writer is behind and the hash, at the speed last
//! measured, takes at most half as long as the last append (its flush included). An append
//! that hashed lasts at least as long as its hash, so when flushes get quicker than twice the
//! hash the rule stops itself. Measured on the 2-vCPU machine of docs/benchmarks.md (seven
//! alternating pairs): eight writers spent 3–9 % less CPU per save in every pair; one agent's
//! saves, whose writer is idle, were unchanged. Hashing whenever the writer was behind, without
//! the flush's length, made one agent's saves twice as long on tmpfs, where the flush is
//! nearly instant and the writer behind only because saves come that fast.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What hashing is assumed to cost before the store has measured it: 1 ns per byte (SHA-256
/// without hardware help runs at about 0.3–0.5 GB/s, with it about 2 GB/s).
const ASSUMED_PS_PER_BYTE: u64 = 1_000;

/// The last append's duration and the last hash's speed of a journaled store.
#[derive(Debug)]
pub(crate) struct HashPace {
    /// How long the last append took, its flush included (ns); 0 before the first.
    append_ns: AtomicU64,
    /// How long the last hash took per byte (ps); 0 before the first.
    hash_ps_per_byte: AtomicU64,
    /// Every save hashes during its flush, whatever the rule says (for tests of that path).
    always: AtomicBool,
}

impl Default for HashPace {
    fn default() -> Self {
        Self {
            append_ns: AtomicU64::new(0),
            hash_ps_per_byte: AtomicU64::new(0),
            always: AtomicBool::new(false),
        }
    }
}

impl HashPace {
    /// Whether a save of `bytes` should hash during its flush: when the writer is behind and
    /// the hash, at the speed last measured, takes at most half as long as the last append.
    pub fn hash_during_flush(&self, bytes: usize, writer_behind: bool) -> bool {
        if self.always.load(Ordering::Relaxed) {
            return true;
        }
        if !writer_behind {
            return false;
        }
        let per_byte = match self.hash_ps_per_byte.load(Ordering::Relaxed) {
            0 => ASSUMED_PS_PER_BYTE,
            measured => measured,
        };
        let hash_ns = (bytes as u64).saturating_mul(per_byte) / 1_000;
        hash_ns.saturating_mul(2) <= self.append_ns.load(Ordering::Relaxed)
    }

    /// Makes every save hash during its flush (tests of that path, which the rule takes only
    /// under load).
    #[cfg(test)]
    pub fn always(&self) {
        self.always.store(true, Ordering::Relaxed);
    }

    /// Whether a save hashed during its flush (its speed was measured).
    #[cfg(test)]
    pub fn hashed_any(&self) -> bool {
        self.hash_ps_per_byte.load(Ordering::Relaxed) > 0
    }

    /// Records an append (its record written and flushed) that took `took`.
    pub fn appended(&self, took: Duration) {
        self.append_ns.store(nanos(took), Ordering::Relaxed);
    }

    /// Whether the last append, its flush included, took less than `than` (true before the
    /// first).
    pub fn appends_quicker(&self, than: Duration) -> bool {
        self.append_ns.load(Ordering::Relaxed) < nanos(than)
    }

    /// Records a hash of `bytes` that took `took`.
    pub fn hashed(&self, bytes: usize, took: Duration) {
        if bytes > 0 {
            let ps = nanos(took).saturating_mul(1_000) / bytes as u64;
            self.hash_ps_per_byte.store(ps.max(1), Ordering::Relaxed);
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_writer_is_left_the_hash_whatever_the_flush() {
        let pace = HashPace::default();
        pace.appended(Duration::from_secs(1));
        assert!(!pace.hash_during_flush(1_000, false));
        assert!(pace.hash_during_flush(1_000, true));
    }

    #[test]
    fn a_save_hashes_during_its_flush_only_when_the_flush_is_twice_as_long() {
        let pace = HashPace::default();
        // Nothing measured yet: no append known, so no time to hash in.
        assert!(!pace.hash_during_flush(100_000, true));
        // 300 µs appends; 100 KB at the assumed 1 ns per byte is 100 µs: hashed.
        pace.appended(Duration::from_micros(300));
        assert!(pace.hash_during_flush(100_000, true));
        // 200 KB would be 200 µs, more than half of it: left to the writer.
        assert!(!pace.hash_during_flush(200_000, true));
        // Measured faster (0.5 ns per byte): 200 KB is 100 µs, hashed.
        pace.hashed(200_000, Duration::from_micros(100));
        assert!(pace.hash_during_flush(200_000, true));
        // Quick flushes (tmpfs): 40 KB is 20 µs, more than half of a 20 µs append.
        pace.appended(Duration::from_micros(20));
        assert!(!pace.hash_during_flush(40_000, true));
    }
}
