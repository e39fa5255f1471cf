//! Diffing two arbitrary valid checkpoints (two length-prefixed halves). The body is shared with
//! the corpus replay test: `caf_core::fuzz_targets::diff_pair`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| caf_core::fuzz_targets::diff_pair(data));
